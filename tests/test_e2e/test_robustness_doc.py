"""docs/robustness.md lists every bad-input case of the case tables
(``test_bad_inputs.py`` and the run tables ``test_bad_inputs_*.py``, one
per surface) with what it must give. Regenerate the tables after adding a
case::

    python tests/test_e2e/test_robustness_doc.py
"""
import os.path as osp
import re
import sys

HERE = osp.dirname(osp.abspath(__file__))
DOC = osp.join(HERE, '..', '..', 'docs', 'robustness.md')
BEGIN, END = '<!-- cases: begin -->', '<!-- cases: end -->'

#: the case tables, each a module of this folder with a ``CASES`` list
TABLES = ('test_bad_inputs', 'test_bad_inputs_checkpoints',
          'test_bad_inputs_plans', 'test_bad_inputs_records',
          'test_bad_inputs_statistics', 'test_bad_inputs_data')


def _cases():
    sys.path[:0] = [HERE, osp.dirname(HERE)]
    import importlib
    return [(f'{name}.py', c) for name in TABLES
            for c in importlib.import_module(name).CASES]


def _plain(regex: str) -> str:
    """A case's expected-message regex as readable text."""
    text = re.sub(r'\\S[*+]|\.\*|\\s[*+]|\^', '…', regex)
    text = re.sub(r'\\(.)', r'\1', text)
    return re.sub(r'(…\s*)+', '… ', text).replace('|', '/').strip()


def table() -> str:
    lines = [
        '| case | what the user does | what happens | test |',
        '|---|---|---|---|'
    ]
    for module, case in _cases():
        # the run table: expect + ok; the data table: error or check
        expect = getattr(case, 'expect', None) or getattr(case, 'error', None)
        happens = 'correct behaviour' if getattr(case, 'ok', False) or \
            not expect else f'error: “{_plain(expect)}”'
        lines.append(f'| `{case.name}` | {case.does.replace("|", "/")} | '
                     f'{happens} | `tests/test_e2e/{module}` |')
    return '\n'.join(lines)


def test_every_table_is_listed_and_every_case_named_once():
    """Every ``test_bad_inputs*.py`` module is one of TABLES; a case name
    is unique over all of them, and every case says what the user does."""
    import glob
    found = sorted(
        osp.basename(p)[:-3]
        for p in glob.glob(osp.join(HERE, 'test_bad_inputs*.py')))
    assert found == sorted(TABLES)
    names = [c.name for _, c in _cases()]
    assert len(names) == len(set(names))
    assert all(c.does for _, c in _cases())


def test_every_case_is_in_the_doc():
    with open(DOC) as f:
        doc = f.read()
    missing = [c.name for _, c in _cases() if f'`{c.name}`' not in doc]
    assert not missing, (f'{missing} are not in docs/robustness.md: run '
                         'python tests/test_e2e/test_robustness_doc.py')


def test_every_test_the_doc_names_exists():
    """Each row's test (``path::name``, a file, or a bare ``test_name``;
    not the case names of the generated table) is a test of the suite: a
    renamed or removed test leaves no row pointing at nothing."""
    root = osp.dirname(osp.dirname(HERE))
    with open(DOC) as f:
        doc = f.read()
    sources = {}
    for folder, _, files in __import__('os').walk(osp.join(root, 'tests')):
        for name in files:
            if name.endswith('.py'):
                path = osp.join(folder, name)
                with open(path) as f:
                    sources[osp.relpath(path, root)] = f.read()
    missing, case_names = [], {c.name for _, c in _cases()}
    for ref in re.findall(r'`((?:tests/\S+?\.py)(?:::\w+)?|test_\w+)`', doc):
        if ref in case_names:  # a case of the tables, not a function
            continue
        path, _, name = ref.rpartition('::') if '::' in ref else ((
            ref, '', '') if ref.endswith('.py') else ('', '', ref))
        where = [sources[path]] if path else list(sources.values())
        if path and path not in sources:
            missing.append(ref)
        elif name and not any(
                re.search(rf'^def {name}\(', s, re.M) for s in where):
            missing.append(ref)
    assert not missing, f'docs/robustness.md names missing tests: {missing}'


if __name__ == '__main__':
    with open(DOC) as f:
        doc = f.read()
    head, rest = doc.split(BEGIN)
    _, tail = rest.split(END)
    text = f'{head}{BEGIN}\n{table()}\n{END}{tail}'
    with open(DOC, 'w') as f:
        f.write(text)
