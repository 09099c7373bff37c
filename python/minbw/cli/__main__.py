import sys

from minbw.cli.main import main

sys.exit(main())
