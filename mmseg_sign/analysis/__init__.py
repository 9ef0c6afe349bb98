"""The measuring harness (not imported by ``import mmseg_sign``): the toy
benchmark's data generator, ``tools/toy_table.py``'s runs, results and
tables with their statistics, the speed / memory benchmark, the device
parity and op audits, and the toy's pictures (matplotlib, imported with
:mod:`.toy_report`). Everything here reads the rest of the package; nothing
of the package reads it."""
