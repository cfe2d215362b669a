#!/bin/bash
set -euo pipefail
echo '{}' > /app/grades.json
