"""python -m ophidis.tools.cli"""

import sys

from ophidis.tools.cli import main

sys.exit(main())
