"""Task folder medqsum (YAML configs and their glue in ``utils.py``).

A regular package so that a wheel (``pip install .``, not only ``pip install -e .``)
carries ``utils.py``, which the YAMLs load with ``!function utils.load``.
"""
