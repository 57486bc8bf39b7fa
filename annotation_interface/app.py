"""MemTrace annotation interface (Streamlit).

    streamlit run annotation_interface/app.py -- --data <graph file or folder> [--output-path …]
        [--api-config …] [--judge-model …] [--index-dir …]

A thin script: the pages live in :mod:`annotation_interface.views`, the logic in testable
modules — :mod:`.dataset` (files and the cached index), :mod:`.loader` / :mod:`.parser` (one
parse and one index per graph), :mod:`.subgraphs`, :mod:`.figures`, :mod:`.attribution` and
:mod:`.annotations`. ``--help`` lists every flag (see :mod:`.cli`).
"""

import sys
from pathlib import Path

if __package__ in (None, ""):  # `streamlit run annotation_interface/app.py` executes this file as a script
    _ROOT = str(Path(__file__).resolve().parents[1])
    if _ROOT not in sys.path:
        sys.path.insert(0, _ROOT)

from annotation_interface.views import main  # noqa: E402

if __name__ == "__main__":
    main()
