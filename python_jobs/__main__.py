import sys

from python_jobs.cli import main

sys.exit(main())
