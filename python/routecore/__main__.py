import sys

from routecore.cli import main

sys.exit(main())
