"""Save annotation records the way the annotator's form does, for the resume tests (see ``_kill``).

Usage: ``python -m tests.resume._annotation_driver OUTPUT N`` appends N records ``{"n": i}``.
"""

from __future__ import annotations

import sys

from tests.resume import _kill

if __name__ == "__main__":
    _kill.install()
    from annotation_interface.annotations import append_record

    for i in range(1, int(sys.argv[2]) + 1):
        append_record(sys.argv[1], {"n": i})
