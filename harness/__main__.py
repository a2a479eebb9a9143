"""``python -m harness`` → ``harness.cli.main``."""

import gc
import sys

from .cli import main

if __name__ == "__main__":
    code = main()
    # The process ends here. Left to itself, shutdown walks every object the run left in
    # its last collection, only to free memory the OS takes back anyway (tens of ms).
    # Frozen objects are skipped; atexit handlers and stream flushes still run.
    gc.freeze()
    sys.exit(code)
