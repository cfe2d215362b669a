# Project shell environment (loaded through BASH_ENV by every non-interactive bash)
export PROJECT_ROOT=/app
export PATH="$PROJECT_ROOT/tools:$PATH"
export LC_ALL=C.UTF-8
