#!/bin/bash
echo "not implemented" >&2
exit 1
