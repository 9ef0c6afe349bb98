"""Bad inputs, data: class-embedding tables, synonyms, word-vector files and
add_classes options: each case is what a user does and the clear error (or
correct behaviour) it must get, run by ``test_bad_input`` (shared context
and helpers: ``tests/bad_input_utils.py``; every case is listed in
docs/robustness.md)."""
import pytest
from bad_input_utils import (Case, _ragged, build_from, build_table,
                             read_table_with, run_case, vector_file)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

CASES = [
    # ---- a misspelt --cfg-options key in add_classes
    Case(
        'add_classes_misspelt_option',
        'tools/add_classes.py ... --cfg-options alow_split_change=True',
        lambda ctx, case: ctx.main(
            'add_classes', ctx.cfg, ctx.ckpt, '--classes', 'kite',
            '--embeddings', ctx.path('data/toy/class_embeddings.npz'), '--out',
            ctx.fresh('grown'
                      ), '--force', '--cfg-options', 'alow_split_change=True'),
        r"--cfg-options alow_split_change=\.\.\.: the config has no "
        r"'alow_split_change' and nothing reads it.*did you mean "
        r'allow_split_change'),
    # ---- silently wrong 10: class-embedding tables
    Case(
        'table_duplicate_rows',
        'a class-embedding table where two classes have the same vector',
        read_table_with([[1, 0, 0], [0, 1, 0], [1, 0, 0]]),
        r"1 pair\(s\) of classes have the same embedding vector: 'c0' "
        r"\(row 0\) = 'c2' \(row 2\)"),
    Case('table_duplicate_names', 'a table listing a class name twice',
         read_table_with([[1, 0], [0, 1]], names=['sky', 'sky']),
         r"the class name\(s\) \['sky'\] appear more than once"),
    Case(
        'build_table_two_classes_one_word',
        'build_class_embeddings.py --synonyms mapping kite to lamp',
        build_table(synonyms={'kite': 'lamp'}),
        r"build_class_embeddings: 1 pair\(s\) of classes have the same "
        r"embedding vector: .*'kite' -> 'lamp'"),
    # ---- obscure: --synonyms files
    Case('synonyms_not_json', 'build_class_embeddings.py --synonyms with '
         'a trailing comma', build_table(synonyms_text=b'{"kite": "a",}'),
         r'--synonyms \S+\.json: not valid JSON \(.* at line 1, column'),
    Case('synonyms_a_list', 'build_class_embeddings.py --synonyms holding '
         'a JSON list', build_table(synonyms=['kite', 'lamp']),
         r'holds a JSON list, not an object mapping class names to words'),
    Case('synonyms_bad_value', 'build_class_embeddings.py --synonyms with '
         'a number as words', build_table(synonyms={'kite': 3}),
         r"the words of 'kite' must be a non-empty string or a list"),
    Case('synonyms_not_utf8', 'build_class_embeddings.py --synonyms in '
         'latin-1',
         build_table(synonyms_text='{"kite": "caf\xe9"}'.encode('latin-1')),
         r'not UTF-8 text'),
    # ---- obscure: bad word-vector files
    Case(
        'vectors_ragged_rows', 'a word2vec text file with a short row',
        build_from(vector_file('ragged.txt', _ragged), 'word2vec'),
        r"Cannot read '\S*ragged\.txt' as word2vec word vectors \(.*\)\. "
        r'Expected a word2vec text file'),
    Case(
        'vectors_empty_file', 'an empty word2vec text file',
        build_from(vector_file('empty.txt', b''), 'word2vec'),
        r"Cannot read '\S*empty\.txt' as word2vec word vectors \(it is "
        r'empty'),
    Case(
        'vectors_text_as_binary', 'the start of a text file named as '
        'word2vec_binary',
        build_from(
            vector_file('text.bin', lambda d: d[:200]), 'word2vec_binary'),
        r"'\S*text\.bin' was given as word2vec_binary, but it is a "
        r'word2vec text file .*name it \S*text\.bin:word2vec'),
    Case(
        'vectors_full_text_as_binary', 'a whole word2vec text file given '
        'as word2vec_binary',
        build_from(vector_file('full.bin', lambda d: d), 'word2vec_binary'),
        r"'\S*full\.bin' was given as word2vec_binary, but it is a "
        r'word2vec text file'),
]


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_bad_input(bad_input_ctx, case):
    run_case(bad_input_ctx, case)
