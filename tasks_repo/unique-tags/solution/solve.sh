#!/bin/bash
mkdir -p /app/out
tr ' ' '\n' < /app/posts.txt | grep -v '^$' | sort -u > /app/out/tags.txt
