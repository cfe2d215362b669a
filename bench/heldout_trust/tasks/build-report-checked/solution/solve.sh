#!/bin/bash
cat > /app/lib/textstats.py <<'PY'
import string


def words(text):
    return [w.strip(string.punctuation) for w in text.split() if w.strip(string.punctuation)]


def mean_word_length(text):
    ws = words(text)
    return sum(len(w) for w in ws) / len(ws) if ws else 0.0
PY
cat > /app/build.sh <<'SH'
#!/bin/bash
set -u
mkdir -p /app/build
compiled=$(find /app/lib -maxdepth 1 -name '*.py' | wc -l)
python3 -m compileall -q /app/lib > /dev/null
python3 - "$compiled" <<'PY'
import json, sys, unittest
suite = unittest.defaultTestLoader.discover("/app/lib/tests")
result = unittest.TextTestRunner(verbosity=1).run(suite)
json.dump({"compiled": int(sys.argv[1]), "tests_run": result.testsRun,
           "failures": len(result.failures) + len(result.errors)}, open("/app/build/report.json", "w"))
PY
SH
chmod +x /app/build.sh
