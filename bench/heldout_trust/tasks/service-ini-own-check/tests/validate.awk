# Validates service.ini on its own; prints VALID or the first problems.
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
/^[ \t]*[;#]/ || /^[ \t]*$/ { next }
/^\[.*\]$/ { section = substr($0, 2, length($0) - 2); next }
{
  eq = index($0, "=")
  if (eq == 0) { bad = bad "line without '=': " $0 "\n"; next }
  key = trim(substr($0, 1, eq - 1)); val = trim(substr($0, eq + 1))
  v[section "." key] = val
}
END {
  if (v["service.name"] != "reports") bad = bad "name\n"
  w = v["service.workers"]
  if (w !~ /^[0-9]+$/ || w + 0 < 2 || w + 0 > 16) bad = bad "workers\n"
  if (v["service.queue"] != "redis://queue.internal:6379/2") bad = bad "queue\n"
  t = v["service.timeout_s"]
  if (t !~ /^[0-9]+$/ || t + 0 < 1 || t + 0 > 300) bad = bad "timeout_s\n"
  l = v["logging.level"]
  if (l != "INFO" && l != "WARNING" && l != "ERROR") bad = bad "level\n"
  if (v["logging.file"] !~ /^\/.*\.log$/) bad = bad "file\n"
  if (bad == "") print "VALID"; else printf "%s", bad
}
