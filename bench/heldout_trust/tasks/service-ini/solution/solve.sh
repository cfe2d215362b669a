#!/bin/bash
cat > /app/service.ini <<'INI'
[service]
name = reports
workers = 4
queue = redis://queue.internal:6379/2
timeout_s = 120

[logging]
level = WARNING
file = /var/log/reports/service.log
INI
/app/tools/validate_ini /app/service.ini
