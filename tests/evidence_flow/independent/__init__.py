"""An attribution benchmark built independently of ``toolkits/faultbench`` (see ``build.py``)."""
