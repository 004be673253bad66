"""Print the absolute include path of the suite's task folders (as ``domsum include-path``)."""

import sys

from lm_eval_tasks.commands.include_path import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
