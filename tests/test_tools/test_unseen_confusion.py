"""tools/analysis/unseen_confusion.py: the confusion rows by hand."""
import numpy as np
from e2e_utils import load_tool

tool = load_tool('analysis/unseen_confusion')


def test_report_by_hand():
    classes = ['road', 'pavement', 'car']
    # rows: labels; columns: predictions
    counts = np.array([[90, 10, 0], [60, 30, 10], [0, 0, 0]])
    lines = tool.report(counts, classes, ['pavement', 'car'], top=2)
    # pavement: 100 pixels, 60 % road, 30 % pavement; 40 % unseen (30 + 10)
    assert lines[2] == ('| pavement (unseen) | 100 | road 60.0 %, '
                        'pavement 30.0 % | 40.0 % |')
    assert lines[3] == '| car | 0 | – | – |'  # no pixel labelled car
    # predicted unseen: 10 + 30 + 10 of 200; labelled unseen: 100 of 200
    assert lines[-1] == ('Of all 200 labelled pixels, 25.0 % are predicted '
                         'unseen; 50.0 % are labelled unseen.')
    every = tool.report(
        counts, classes, ['pavement', 'car'], top=1, rows=classes)
    assert every[2] == '| road | 100 | road 90.0 % | 10.0 % |'
    assert every[3].startswith('| pavement (unseen) | 100 | road 60.0 % |')
