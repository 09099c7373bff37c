import sys

from minbw.cli.shell import main

sys.exit(main())
