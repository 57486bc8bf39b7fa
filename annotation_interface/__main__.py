"""``python -m annotation_interface --data …``: start the Streamlit viewer (see ``--help``)."""

import sys

from annotation_interface.cli import main

sys.exit(main())
