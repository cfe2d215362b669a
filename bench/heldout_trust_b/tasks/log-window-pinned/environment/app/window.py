import sys

sys.exit("not implemented")
