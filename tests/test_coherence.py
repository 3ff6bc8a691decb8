"""One analysis, one truth (issue 30): the coherence matrix.

Rows are the elements of the analysis state; columns are its consumers. Each cell names the test
that checks that the consumer shows what the state says: ``here:`` is a test of this module,
otherwise a test file (under tests/) and the name of its test. ``n/a`` says why the consumer has nothing of that element to show.

Consumers: **views** (every view that uses the element), **project** (save and reopen),
**CSV** (the window's CSV export, ``tables.export``), **report** (the HTML report),
**script** (the exported script run in a fresh process), **replay** (a project applied to a file),
**recovery** (the autosave file, which reopens as a project).

=============  ==========================================================================================
element        consumer: test
=============  ==========================================================================================
chain          views: gui/test_gui_one_truth.py::test_wine_standardized_kmeans_map_silhouette_and_pca_views,
                 ::test_feature_views_offer_the_run_prepared_columns_and_say_so,
                 ::test_correlations_and_ranking_read_the_prepared_data (Correlations, Feature ranking),
                 ::test_choose_k_computes_on_what_the_next_run_fits
               project: session/test_analysis_state.py::test_project_keeps_the_chain_and_the_cut,
                 gui/test_gui_one_truth.py::test_chain_saved_reopened_and_run_gives_the_same_labels,
                 here: test_project_keeps[chain]
               CSV: here: test_csv_export_shows[chain] (the labels fitted through the chain)
               report: gui/test_gui_report.py::test_items_record_the_preparation_chain,
                 here: test_html_report_shows[chain]
               script: analysis/test_script_columns.py::test_a_chain_naming_columns_runs_in_the_script_as_in_the_session,
                 here: test_script_in_a_fresh_process_gives[chain]
               replay: analysis/test_replay.py::test_replay_of_a_run_with_a_preparation_chain_applies_its_pipeline,
                 here: test_replay_gives[chain]
               recovery: here: test_recovery_keeps_the_chain_and_the_form_values,
                 gui/test_gui_recovery.py::test_the_autosave_keeps_the_chain_and_the_form_values
roles          views: gui/test_gui_meta_columns.py::test_penguins_metas_colour_the_map_and_fill_the_table
               project: here: test_project_keeps[roles],
                 gui/test_gui_report.py::test_roles_and_a_labelled_meta_column_survive_the_project_and_reach_the_script
               CSV: here: test_csv_export_shows[roles]
               report: analysis/test_report.py::test_data_item_of_a_table_lists_the_columns_by_role
               script: here: test_script_in_a_fresh_process_gives[roles]
               replay: here: test_replay_gives[roles] (the new file gets the saved roles)
id column      views: gui/test_gui_data_table.py::test_header_click_sorts_with_argsort_and_keeps_the_row_column
               project: here: test_project_keeps[id column]
               CSV: here: test_csv_export_shows[id column]
               report: n/a (a figure and its facts; no rows are listed)
               script: n/a (the script writes one row per fitted row, in the file's order)
               replay: here: test_replay_gives[id column]
cut            views: gui/test_gui_one_truth.py::test_cut_changes_title_export_project_and_undo,
                 ::test_a_chosen_k_cuts_the_run_through_the_session,
                 gui/test_gui_dendrogram_cut.py::test_dragged_cut_is_exported_saved_and_restored,
                 gui/test_gui_chosen_k.py::test_a_chosen_k_cuts_the_hierarchical_run_in_the_window_export_and_project
                 (Choose k's "Run with k" cuts the run: window, CSV, reopened project)
               project: here: test_project_keeps[cut]
               CSV: here: test_csv_export_shows[cut]
               report: session/test_analysis_state.py::test_cut_is_run_state_undoable_and_seen_by_title_and_report,
                 here: test_html_report_shows[cut]
               script: analysis/test_cut_state.py::test_a_cut_at_4_clusters_reaches_the_project_the_script_and_replay,
                 here: test_script_in_a_fresh_process_gives[cut],
                 gui/test_gui_chosen_k.py::test_a_chosen_k_reaches_the_script_in_a_fresh_process_and_cli_replay
               replay: here: test_replay_gives[cut] (and the chosen k through ``manifold-studio replay``, above)
window-made    views: gui/test_gui_selection.py::test_label_the_selection_writes_a_new_meta_column_or_a_picked_one_and_undoes
labels         project: here: test_project_keeps[window-made labels]
               CSV: here: test_csv_export_shows[window-made labels]
               script: gui/test_gui_report.py::test_roles_and_a_labelled_meta_column_survive_the_project_and_reach_the_script
                 (a meta column: the script fits what the session fitted)
               report: n/a (a labelling is shown through the views added, e.g. a map coloured by it)
               replay: n/a (replay writes the runs' outputs; meta columns are never model input)
colour-by      (session.view_setting("map", "colour") and the map's other settings, session/view_state.py)
               views: gui/test_gui_view_state.py::test_colour_by_and_point_size_are_session_settings (the map
                 follows the model's setting, undo included; the map instruments' density too),
                 gui/test_gui_map_encoding.py::test_colour_by_a_feature_column_uses_make_coloring_on_the_drawn_rows
               project: here: test_project_keeps[colour-by],
                 gui/test_gui_view_state.py::test_a_reopened_project_shows_the_saved_selection_colour_and_report,
                 gui/test_gui_project.py::test_save_then_open_in_a_new_window (the map's colour-by column)
               recovery: here: test_recovery_keeps_the_chain_and_the_form_values (and the views' settings),
                 session/test_view_state.py::test_project_and_recovery_keep_selection_view_settings_and_report
               report: gui/test_gui_report_buttons.py::test_every_view_has_add_to_report_and_each_click_adds_its_figure_in_order
               CSV, script, replay: n/a (a colour is a view setting, not data)
selection      (session.set_selection & co, session/view_state.py; gui/selection_model.py is its Qt adapter)
               views: gui/test_gui_view_state.py::test_the_selection_is_read_from_the_session_and_undone,
                 gui/test_gui_selection.py::test_lasso_with_mouse_events_selects_the_rows_inside_and_a_second_map_highlights_them,
                 ::test_grid_of_plots_shares_one_mode_bar_and_the_selection
               project: here: test_project_keeps[selection],
                 gui/test_gui_view_state.py::test_a_reopened_project_shows_the_saved_selection_colour_and_report,
                 session/test_view_state.py::test_project_and_recovery_keep_selection_view_settings_and_report
                 (with the kept selections: Explain's "B", session/test_view_state.py::test_a_kept_selection_is_a_command_and_keeps_its_rows)
               recovery: here: test_recovery_keeps_the_chain_and_the_form_values (and the selection)
               CSV: here: test_selected_rows_copied_are_the_model_selection,
                 gui/test_gui_view_state.py::test_the_selection_is_read_from_the_session_and_undone,
                 gui/test_gui_export.py::test_copy_selected_rows_and_image
               report, script, replay: n/a (what a selection makes — a data set, a label column — is state
                 and has its own row)
seed           views: gui/test_gui_settings_and_seeds.py::test_the_algorithm_form_shows_the_default_seed
               evaluation: here: test_a_drawn_seed_refits_the_same_model (Session.run_estimator)
               project: here: test_project_keeps[seed]
               CSV: here: test_csv_export_shows[seed]
               script: here: test_script_in_a_fresh_process_gives[seed]
               replay: here: test_replay_gives[seed]
               report: here: test_html_report_shows[seed] (the run's random_state_used)
evaluation     views: gui/test_gui_classification.py::test_kfold_on_iris_and_the_map_coloured_by_predicted_class,
                 gui/test_gui_settings_and_seeds.py::test_test_and_score_in_the_window_equals_the_api_twice
               project: here: test_project_keeps[evaluation],
                 gui/test_gui_test_score.py::test_runs_table_scores_and_a_reopened_project_keeps_every_evaluation
               script: here: test_script_in_a_fresh_process_gives[evaluation] (an MLP with a drawn seed),
                 analysis/test_seed_defaults.py::test_default_mlp_and_svm_agree_across_api_runs_and_the_command_line,
                 gui/test_gui_same_numbers.py::test_window_twice_score_and_the_exported_script_give_identical_figures
                 (default seeds: two window runs, ``score`` and the script, exactly equal)
               report: here: test_html_report_shows[evaluation]
               CSV: n/a (scores are not rows of the data set); replay: n/a (replay applies models, it scores nothing)
comparison     views: gui/test_gui_compare_clusterings.py::test_two_methods_table_plot_and_make_run,
                 gui/test_gui_test_score.py::test_test_and_score_four_learners_against_sklearn
               project: gui/test_gui_compare_clusterings.py::test_the_project_keeps_the_comparison_and_the_report_adds_it,
                 analysis/test_compare_learners.py::test_comparison_and_evaluation_records_round_trip_through_a_project
               report: gui/test_gui_compare_clusterings.py::test_the_project_keeps_the_comparison_and_the_report_adds_it
               script: analysis/test_script_export.py::test_a_test_and_score_with_a_chain_is_reproduced_by_the_script
               CSV, replay: n/a (a comparison is a table of scores, written by its own export)
report items   (session.add_report_item / remove / move / set_report_caption, session/view_state.py)
               views: gui/test_gui_view_state.py::test_report_items_are_commands_the_dialog_follows,
                 gui/test_gui_report.py::test_add_to_report_from_views_and_save_html_and_pdf,
                 gui/test_gui_report_buttons.py::test_a_view_that_draws_nothing_yet_is_not_added_blank
               project: here: test_project_keeps[report items],
                 gui/test_gui_report.py::test_report_survives_saving_and_reopening_the_project
               report: here: test_html_report_renders_the_model_items,
                 analysis/test_report.py::test_html_is_self_contained_escaped_and_has_every_figure
               recovery: here: test_recovery_keeps_the_chain_and_the_form_values (and the report),
                 analysis/test_report.py::test_the_recovery_snapshot_keeps_the_report
               CSV, script, replay: n/a (the report is its own output)
=============  ==========================================================================================

Third-party code in the window (issue 29 item 3): a run with a third-party step fits in a worker
(session/test_isolated_steps.py::test_a_chain_with_a_crashing_third_party_step_fails_only_its_run);
Test & Score, Compare clusterings and a run's evaluation too
(analysis/test_isolated_compare.py::test_test_and_score_with_a_third_party_step_runs_in_a_worker_with_the_same_figures,
::test_a_segfaulting_step_ends_only_the_worker_of_test_and_score,
::test_compare_clusterings_with_a_third_party_step_in_a_worker,
::test_a_run_evaluation_with_a_third_party_step_in_a_worker (the Classification dock's evaluation),
gui/test_gui_isolated_compare.py::test_test_and_score_and_compare_clusterings_isolate_a_third_party_step);
the Preparation dock's preview and Feature ranking never fit one in the window's process
(gui/test_gui_isolated_compare.py::test_a_third_party_step_is_not_previewed_in_the_window_process).

Bad input (issue 30), each with a clear message and nothing lost:

- a project whose chain names a step not installed:
  session/test_analysis_state.py::test_project_naming_a_step_not_installed_keeps_the_chain_and_says_so,
  gui/test_gui_one_truth.py::test_a_project_chain_with_a_step_not_installed_is_shown_and_blocks_run
- a cut on a run whose data set was removed:
  session/test_analysis_state.py::test_bad_cuts_are_refused_with_a_clear_message_and_nothing_lost,
  gui/test_gui_chosen_k.py::test_a_chosen_k_cuts_the_hierarchical_run_in_the_window_export_and_project (Choose k)
- a report item whose view has nothing to show:
  gui/test_gui_report_buttons.py::test_a_view_that_draws_nothing_yet_is_not_added_blank,
  ::test_a_tool_that_has_not_run_says_so
- a project whose saved selection is damaged (rows out of range, a missing member): left out, named,
  the rest opens: session/test_view_state.py::test_a_damaged_selection_in_a_project_is_left_out_and_said
- a replay file whose chain step cannot fit: here: test_replay_of_a_file_a_chain_step_cannot_take_says_so,
  analysis/test_replay.py::test_replay_of_a_run_whose_chain_step_is_not_installed_names_the_step_and_replays_the_others
- a plugin with a misspelled hook: plugins/test_plugin_host.py::test_misspelled_hook_is_refused_naming_it_and_others_load
- a form value that violates a data-dependent check:
  gui/test_gui_settings_and_seeds.py::test_perplexity_above_n_is_said_before_run_and_run_stays_off,
  here: test_a_data_dependent_check_is_said_before_the_fit,
  algorithms/test_data_dependent_checks.py::test_a_value_the_data_cannot_take_is_said_before_the_fit_and_refused_by_it,
  gui/test_gui_data_checks.py::test_a_value_the_data_cannot_take_is_said_before_run

Sparse data sets extend in the window for every method that takes sparse input (Done means):
gui/test_gui_lifecycle.py::test_every_method_that_takes_sparse_input_is_here,
::test_sparse_data_extends_in_the_window_as_in_the_session,
::test_a_sparse_file_extends_in_the_window (Extend ▸ a Matrix Market file),
algorithms/test_sparse_extension_paths.py::test_spectral_clustering_extends_sparse_rows_as_their_dense_copy,
extend/test_out_of_core.py::test_extend_to_a_sparse_file_keeps_its_rows_sparse.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.reproduce.replay import replay
from manifold_studio.analysis.report import run_item
from manifold_studio.reproduce.script_export import run_output_name, write_script
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.evaluation import KFOLD, evaluate
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.annotate import label_into_column
from manifold_studio.session.model import Session
from manifold_studio.tables.export import export_dataset_csv

STANDARDIZE = ("standardize", {"with_mean": True, "with_std": True})
N_TAGGED = 10
SELECTED = [2, 11, 75, 149]
COLOUR = "col:petal_width"


def _write_iris(path, X, y, names, ids):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", *names, "kind", "note"])
        for i, row, c in zip(ids, X.tolist(), y):
            w.writerow([i, *map(repr, row), str(c), "n"])
    return path


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One small session with every element of the state set, and what each consumer made of it:
    the project, the CSV export, the script run once in a fresh process, and one replay."""
    tmp = tmp_path_factory.mktemp("coherence")
    iris = ms.load_data("sample:iris")
    ids = [f"r{i:03d}" for i in range(iris.n_samples)]
    data = _write_iris(tmp / "iris.csv", iris.X, iris.labels, iris.feature_names, ids)
    s = Session()
    s.load(str(data), label_column="kind", id_column="id", roles={"note": "meta"})
    s.set_chain([STANDARDIZE], "Add standardize")
    seeded = s.run("kmeans", n_clusters=3, n_init=1, random_state=None)  # the seed is drawn
    tree = s.run("hierarchical", n_clusters=3, method="ward")
    s.cut(tree.id, n_clusters=4)
    learner = s.run("mlp", hidden_layer_sizes=(8,), max_iter=40, random_state=None)  # a drawn seed
    result = evaluate(s.run_estimator(learner), *s.training_data(learner), KFOLD, n_splits=3, random_state=0)
    learner.meta["evaluation"] = {"summary": result.summary(), "mean_accuracy": result.mean_accuracy,  # as the
                                  "fold_accuracy": [float(a) for a in result.fold_accuracy],  # window records it
                                  **result.params}
    label_into_column(s.dataset(), np.arange(N_TAGGED), "tag", "picked")
    s.add_report_item(run_item(tree))  # the report, the selection and the map's colour: commands
    s.set_report_caption(0, "the cut tree")
    s.set_selection(s.current_dataset_name, SELECTED)
    s.set_view_setting("map", "colour", COLOUR)
    project = save_project(s, tmp / "p.msproj")
    csv_path = tmp / "export.csv"
    export_dataset_csv(s, s.current_dataset_name, csv_path)
    script = write_script(project, tmp / "analysis.py")
    done = subprocess.run([sys.executable, str(script), str(tmp / "out")], cwd=tmp, capture_output=True,
                          text=True, timeout=300)
    replayed = replay(project, data, tmp / "replayed")
    return {"s": s, "seeded": seeded, "tree": tree, "learner": learner, "evaluation": result, "ids": ids, "tmp": tmp, "project": project,
            "back": read_project(project), "csv": _read_csv(csv_path), "script": script, "done": done,
            "replayed": {rid: _read_csv(p) for rid, p in replayed.outputs}}


def _script_labels(world, run):
    header, rows = _read_csv(world["tmp"] / "out" / f"{run_output_name(run)}.csv")
    return np.array([int(r[header.index("label")]) for r in rows])


# -- project -----------------------------------------------------------------------------------
@pytest.mark.parametrize("element", ["chain", "roles", "id column", "cut", "window-made labels", "seed",
                                     "evaluation", "report items", "selection", "colour-by"])
def test_project_keeps(world, element):
    s, back = world["s"], world["back"].session
    assert not world["back"].problems
    ds, again = s.dataset(), back.dataset(s.current_dataset_name)
    tree, seeded = world["tree"], world["seeded"]
    if element == "chain":
        assert back.chain == [STANDARDIZE] and back.runs[seeded.id].meta["chain"] == seeded.meta["chain"]
    elif element == "roles":
        assert again.table.roles == ds.table.roles and again.table.roles["note"] == "meta"
        assert again.label_name == "kind" and again.feature_names == ds.feature_names
    elif element == "id column":
        assert list(again.row_ids) == world["ids"]
    elif element == "cut":
        np.testing.assert_array_equal(back.runs[tree.id].cut_labels, tree.cut_labels)
        assert back.runs[tree.id].params_text().startswith("n_clusters=4,")
    elif element == "window-made labels":
        tag = [c for c in again.table.columns if c.name == "tag"][0]
        assert tag.role == "meta" and list(tag.decoded()[:N_TAGGED]) == ["picked"] * N_TAGGED
    elif element == "seed":
        run = back.runs[seeded.id]
        assert run.params["random_state"] is None
        assert run.refit_params["random_state"] == seeded.summary["random_state_used"]
    elif element == "evaluation":
        learner = world["learner"]
        assert back.runs[learner.id].meta["evaluation"]["fold_accuracy"] == learner.meta["evaluation"]["fold_accuracy"]
    elif element == "report items":
        assert [i.caption for i in back.report.items] == ["the cut tree"]
        assert [i.kind for i in back.report.items] == [i.kind for i in s.report.items]
    elif element == "selection":
        np.testing.assert_array_equal(back.selected_rows(s.current_dataset_name), SELECTED)
    elif element == "colour-by":
        assert back.view_setting("map", "colour") == COLOUR and back.view_settings() == s.view_settings()


# -- CSV export --------------------------------------------------------------------------------
@pytest.mark.parametrize("element", ["chain", "roles", "id column", "cut", "window-made labels", "seed"])
def test_csv_export_shows(world, element):
    header, rows = world["csv"]
    col = {name: [r[j] for r in rows] for j, name in enumerate(header)}
    tree, seeded = world["tree"], world["seeded"]
    if element in ("chain", "seed"):  # the labels fitted through the chain with the drawn seed
        np.testing.assert_array_equal(np.array(col[f"#{seeded.id} kmeans cluster"], dtype=float), seeded.labels)
    elif element == "roles":
        assert "note" in col and "kind" in col
    elif element == "id column":
        assert header[0] == "row_id" and col["row_id"] == world["ids"]
    elif element == "cut":
        got = np.array(col[f"#{tree.id} hierarchical cluster"], dtype=float)
        np.testing.assert_array_equal(got, tree.cut_labels)
        assert np.unique(got).size == 4
    elif element == "window-made labels":
        assert col["tag"][:N_TAGGED] == ["picked"] * N_TAGGED and set(col["tag"][N_TAGGED:]) == {""}


# -- the HTML report ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def html(world):
    from manifold_studio.analysis.report import Report
    from manifold_studio.analysis.report_html import report_html

    report = Report([run_item(world[k]) for k in ("tree", "seeded", "learner")])
    return report_html(report)


@pytest.mark.parametrize("element", ["chain", "cut", "seed", "evaluation"])
def test_html_report_shows(world, html, element):
    import html as html_module

    text = html_module.unescape(html)
    tree, seeded = world["tree"], world["seeded"]
    if element == "chain":
        assert text.count("standardize") >= 3  # each run's preparation
    elif element == "cut":
        assert f"Run #{tree.id}: " in text and "<td>n_clusters=4, method=ward," in text and "fitted with n_clusters=3)" in text
    elif element == "seed":
        assert "random_state_used" in text and str(seeded.summary["random_state_used"]) in text
    elif element == "evaluation":
        assert world["evaluation"].summary() in text


def test_html_report_renders_the_model_items(world):
    """The HTML report is the session's report: its items, in order, with the caption the
    caption command gave."""
    import html as html_module
    from manifold_studio.analysis.report_html import report_html

    text = html_module.unescape(report_html(world["s"].report))
    assert f"Run #{world['tree'].id}: " in text and "the cut tree" in text


# -- the selection's CSV (Copy selected rows) ------------------------------------------------------
def test_selected_rows_copied_are_the_model_selection(world):
    """Copy selected rows (gui/export.py) writes the session's selected rows, with their ids."""
    from manifold_studio.tables.export import dataset_table, rows_as_tsv, with_row_ids

    s = world["s"]
    name = s.current_dataset_name
    header, columns = with_row_ids(s, name, *dataset_table(s, name))
    lines = rows_as_tsv(header, columns, s.selected_rows(name)).splitlines()
    assert [line.split("\t")[0] for line in lines[1:]] == [world["ids"][i] for i in SELECTED]


# -- the exported script, in a fresh process ----------------------------------------------------
@pytest.mark.parametrize("element", ["chain", "roles", "cut", "seed", "evaluation"])
def test_script_in_a_fresh_process_gives(world, element):
    assert world["done"].returncode == 0, world["done"].stderr
    tree, seeded = world["tree"], world["seeded"]
    if element in ("chain", "seed"):  # standardize, then k-means with the seed drawn in the session
        np.testing.assert_array_equal(_script_labels(world, seeded), seeded.labels)
        assert f"drew seed {seeded.summary['random_state_used']}" in world["done"].stderr
    elif element == "cut":
        np.testing.assert_array_equal(_script_labels(world, tree), tree.cut_labels)
    elif element == "evaluation":  # the MLP's folds refitted with the seed its run drew: the same scores
        learner = world["learner"]
        with open(world["tmp"] / "out" / f"{run_output_name(learner)}_evaluation.json", encoding="utf-8") as f:
            got = json.load(f)
        np.testing.assert_allclose(got["fold_accuracy"], world["evaluation"].fold_accuracy, atol=1e-12)
        header, rows = _read_csv(world["tmp"] / "out" / f"{run_output_name(learner)}.csv")
        assert [r[header.index("label")] for r in rows] == [str(v) for v in learner.labels]
    elif element == "roles":  # the meta column is not a feature: the fit saw the 4 measurements
        assert "'note': 'meta'" in world["script"].read_text() or '"note": "meta"' in world["script"].read_text()


# -- replay ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("element", ["chain", "roles", "id column", "cut", "seed"])
def test_replay_gives(world, element):
    tree, seeded = world["tree"], world["seeded"]
    out = world["replayed"]
    if element in ("chain", "seed", "roles"):  # the training file: every row keeps its cluster
        header, rows = out[seeded.id]  # the labels come last, after the row id and the meta columns
        np.testing.assert_array_equal([int(r[-1]) for r in rows], seeded.labels)
    elif element == "id column":
        header, rows = out[tree.id]
        assert header[0] == "id" and [r[0] for r in rows] == world["ids"]
    elif element == "cut":
        header, rows = out[tree.id]
        np.testing.assert_array_equal([int(r[-1]) for r in rows], tree.cut_labels)


# -- seeds in refits -----------------------------------------------------------------------------
def test_a_drawn_seed_refits_the_same_model(world):
    s, seeded = world["s"], world["seeded"]
    assert seeded.params["random_state"] is None and isinstance(seeded.summary["random_state_used"], int)
    est = s.run_estimator(seeded)  # what an evaluation refits on each training part
    assert est.final.random_state == seeded.summary["random_state_used"]
    np.testing.assert_array_equal(est.fit(s.dataset().X).labels_, seeded.labels)
    learner = world["learner"]  # an evaluation's folds are fitted with the seed the run drew
    assert s.run_estimator(learner).final.random_state == learner.summary["random_state_used"]
    full = s.run_estimator(learner).fit(*s.training_data(learner))
    np.testing.assert_array_equal(full.predict(s.dataset().X), learner.labels)


# -- the autosave (recovery) file ------------------------------------------------------------------
def test_recovery_keeps_the_chain_and_the_form_values(world, tmp_path, monkeypatch):
    from manifold_studio.project.recovery import snapshot, write_recovery

    monkeypatch.setenv("MANIFOLD_STUDIO_RECOVERY_DIR", str(tmp_path))
    s = world["s"]
    forms = {"tsne": {"perplexity": 12.0}, "kmeans": {"n_clusters": 5}}
    path = write_recovery(snapshot(s), {}, analyses={}, form_values=forms)
    back = read_project(path)
    assert back.session.chain == [STANDARDIZE] == s.chain
    assert back.form_values == forms
    np.testing.assert_array_equal(back.session.selected_rows(s.current_dataset_name), SELECTED)
    assert back.session.view_setting("map", "colour") == COLOUR
    assert [i.caption for i in back.session.report.items] == ["the cut tree"]
    np.testing.assert_array_equal(back.session.runs[world["tree"].id].cut_labels, world["tree"].cut_labels)


# -- bad input ------------------------------------------------------------------------------------
def test_replay_of_a_file_a_chain_step_cannot_take_says_so(tmp_path):
    """A replay file whose values a fitted chain step cannot take (log1p of a negative value):
    one message naming the run, the file, the step, the column and the row; nothing written."""
    iris = ms.load_data("sample:iris")
    ids = [f"r{i:03d}" for i in range(iris.n_samples)]
    train = _write_iris(tmp_path / "train.csv", iris.X, iris.labels, iris.feature_names, ids)
    s = Session()
    s.load(str(train), label_column="kind", id_column="id", roles={"note": "meta"})
    s.run("pca", chain=[], n_components=2)
    logged = s.run("kmeans", chain=[("log", {})], n_clusters=3)
    project = save_project(s, tmp_path / "p.msproj")
    X = iris.X.copy()
    X[3, 1] = -5.0
    bad = _write_iris(tmp_path / "bad.csv", X, iris.labels, iris.feature_names, ids)
    with pytest.raises(ManifoldStudioError) as err:
        replay(project, bad, tmp_path / "out")
    text = str(err.value)
    assert f"Run #{logged.id} (kmeans) cannot be applied to bad.csv" in text
    assert "Step 'log'" in text and "'sepal_width'" in text and "row 3" in text and "Nothing was written" in text
    assert not (tmp_path / "out").exists()  # not even the pca run's output, made before it


def test_a_data_dependent_check_is_said_before_the_fit():
    """A value that violates a data-dependent check (perplexity ≥ n) is refused before any work,
    naming the parameter and the bound (the rows a run fits on count); the run is recorded as
    failed with that message and earlier runs are untouched. The window says it before Run
    (gui/test_gui_settings_and_seeds.py::test_perplexity_above_n_is_said_before_run_and_run_stays_off)."""
    s = Session()
    s.load("sample:iris")
    first = s.run("pca", n_components=2)
    message = "perplexity=200 is too large: perplexity must be below n = 150"
    with pytest.raises(ManifoldStudioError, match=message):
        s.run("tsne", perplexity=200.0)
    with pytest.raises(ManifoldStudioError, match="below n = 40"):
        s.run("tsne", rows=np.arange(40), perplexity=45.0)
    est = ms.get_algorithm("tsne", perplexity=200.0)
    assert any("below n = 150" in p for p in est.check_params_vs_input(150, 4))  # what the form shows
    failed = [r for r in s.runs.values() if r.id != first.id]
    assert [r.status for r in failed] == ["failed", "failed"] and message in failed[0].error
    assert s.runs[first.id].succeeded and s.runs[first.id].embedding.shape == (150, 2)


def test_every_test_the_matrix_names_exists():
    """Each ``file.py::test`` (and ``::test`` continuing the file before it, ``here: test``) of
    the table above names a test function that exists."""
    import re
    from pathlib import Path

    root = Path(__file__).parent
    missing, current = [], None
    for m in re.finditer(r"(?:([\w/]+\.py))?::(\w+)|here: (\w+)", __doc__):
        path, name, here = m.groups()
        if here:
            path_obj, name = Path(__file__), here
        else:
            current = path or current
            path_obj = root / current
        if f"def {name}(" not in path_obj.read_text(encoding="utf-8"):
            missing.append(f"{path_obj.name}::{name}")
    assert not missing, missing
