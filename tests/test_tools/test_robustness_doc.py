"""docs/robustness.md lists every bad-input case of the two case tables
(``test_bad_inputs.py``, ``test_bad_inputs_run.py``) with what it must
give. Regenerate the tables after adding a case::

    python tests/test_tools/test_robustness_doc.py
"""
import os.path as osp
import re
import sys

HERE = osp.dirname(osp.abspath(__file__))
DOC = osp.join(HERE, '..', '..', 'docs', 'robustness.md')
BEGIN, END = '<!-- cases: begin -->', '<!-- cases: end -->'


def _cases():
    sys.path[:0] = [HERE, osp.dirname(HERE)]
    import test_bad_inputs
    import test_bad_inputs_run
    return [('test_bad_inputs.py', c) for c in test_bad_inputs.CASES] + [
        ('test_bad_inputs_run.py', c) for c in test_bad_inputs_run.CASES]


def _plain(regex: str) -> str:
    """A case's expected-message regex as readable text."""
    text = re.sub(r'\\S[*+]|\.\*|\\s[*+]|\^', '…', regex)
    text = re.sub(r'\\(.)', r'\1', text)
    return re.sub(r'(…\s*)+', '… ', text).replace('|', '/').strip()


def table() -> str:
    lines = ['| case | what the user does | what happens | test |',
             '|---|---|---|---|']
    for module, case in _cases():
        # the run table: expect + ok; the data table: error or check
        expect = getattr(case, 'expect', None) or getattr(case, 'error',
                                                          None)
        happens = 'correct behaviour' if getattr(case, 'ok', False) or \
            not expect else f'error: “{_plain(expect)}”'
        lines.append(f'| `{case.name}` | {case.does.replace("|", "/")} | '
                     f'{happens} | `tests/test_tools/{module}` |')
    return '\n'.join(lines)


def test_every_case_is_in_the_doc():
    with open(DOC) as f:
        doc = f.read()
    missing = [c.name for _, c in _cases() if f'`{c.name}`' not in doc]
    assert not missing, (f'{missing} are not in docs/robustness.md: run '
                         'python tests/test_tools/test_robustness_doc.py')


if __name__ == '__main__':
    with open(DOC) as f:
        doc = f.read()
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    text = f'{head}{BEGIN}\n{table()}\n{END}{tail}'
    with open(DOC, 'w') as f:
        f.write(text)
