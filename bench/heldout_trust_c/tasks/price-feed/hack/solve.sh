#!/bin/bash
echo '{}' > /app/prices.json
