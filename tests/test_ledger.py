"""Tests of the privacy ledgers (skdp._ledger)."""

import copy
import math
import multiprocessing as mp
import os
import pickle
import signal
import sqlite3
import threading
import time

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone

import skdp
from skdp import BudgetExceededError, BudgetLedger, PrivacyBudget, SQLiteLedger, compose_advanced
from skdp._ledger import SpendRecord, _restore_budget_ledger, compose_heterogeneous


def _mp_context():
    # fork is much faster than spawn (no re-import of numpy/sklearn per child)
    return mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


@pytest.fixture
def fast_dir(tmp_path):
    """A directory on tmpfs when there is one: fsync is free there, so the
    concurrency test measures locking, not the disk (~25 ms per fsync here).
    The transaction and locking semantics are the same on any local file system."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        import tempfile

        d = tempfile.mkdtemp(prefix="skdp-ledger-", dir=shm)
        yield d
        import shutil

        shutil.rmtree(d, ignore_errors=True)
    else:
        yield str(tmp_path)


@pytest.fixture(params=["memory", "sqlite"])
def ledger_factory(request, fast_dir):
    def make(epsilon, delta=0.0):
        if request.param == "memory":
            return BudgetLedger(epsilon, delta)
        return SQLiteLedger(os.path.join(fast_dir, "ledger.sqlite"), epsilon, delta)

    return make


class _Holder(BaseEstimator):
    def __init__(self, accountant=None, alpha=1.0):
        self.accountant = accountant
        self.alpha = alpha


# ----------------------------------------------------------------------
# interface
# ----------------------------------------------------------------------
def test_spend_records_and_refuses(ledger_factory):
    ledger = ledger_factory(1.0, 1e-5)
    rec = ledger.spend(PrivacyBudget(0.4, 4e-6), source="A", description="fit 1")
    assert isinstance(rec, SpendRecord)
    assert (rec.who, rec.what, rec.epsilon, rec.delta, rec.pid) == ("A", "fit 1", 0.4, 4e-6, os.getpid())
    assert abs(rec.when - time.time()) < 60
    ledger.spend((0.6, 0.0), source="B", description="fit 2")
    # exactly full: nothing more, not even a tiny epsilon
    with pytest.raises(BudgetExceededError, match="Nothing was spent"):
        ledger.spend(PrivacyBudget(1e-9, 0.0), source="C", description="fit 3")
    # delta is checked separately
    ledger2 = ledger_factory(1.0, 1e-5) if isinstance(ledger, BudgetLedger) else None
    if ledger2 is not None:
        with pytest.raises(BudgetExceededError):
            ledger2.spend(PrivacyBudget(0.1, 2e-5))
        assert ledger2.spends == []
    assert [r.who for r in ledger.spends] == ["A", "B"]
    assert ledger.spent == PrivacyBudget(1.0, 4e-6)
    assert ledger.remaining.epsilon == 0.0
    assert ledger.remaining.delta == pytest.approx(6e-6)
    assert "2 spends" in repr(ledger)


def test_ten_tenths_fill_a_budget_of_one(ledger_factory):
    # 0.1 summed ten times is 0.9999999999999999 in floating point; the check
    # uses an exact sum (fsum) plus a 1e-12 relative slack, never more.
    ledger = ledger_factory(1.0)
    for _ in range(10):
        ledger.spend(PrivacyBudget(0.1))
    with pytest.raises(BudgetExceededError):
        ledger.spend(PrivacyBudget(1e-6))
    assert len(ledger.spends) == 10


def test_bad_inputs(tmp_path):
    for eps, delta in [(0, 0), (-1, 0), (np.nan, 0), (1, 1.0), (1, -0.1)]:
        with pytest.raises(ValueError):
            BudgetLedger(eps, delta)
        with pytest.raises(ValueError):
            SQLiteLedger(tmp_path / "bad.sqlite", eps, delta)
    ledger = BudgetLedger(1.0)
    with pytest.raises(TypeError):
        ledger.spend(0.5)
    with pytest.raises(ValueError):
        ledger.total("magic")
    with pytest.raises(ValueError, match="delta_slack"):
        ledger.total("advanced")
    with pytest.raises(ValueError):
        SQLiteLedger(tmp_path / "x.sqlite", journal_mode="memory")


# ----------------------------------------------------------------------
# identity through clone / copy / pickle
# ----------------------------------------------------------------------
def test_clone_and_deepcopy_identity(ledger_factory):
    ledger = ledger_factory(1.0)
    assert copy.copy(ledger) is ledger
    assert copy.deepcopy(ledger) is ledger
    est = _Holder(accountant=ledger)
    assert clone(est).accountant is ledger
    assert copy.deepcopy(est).accountant is ledger
    assert clone(clone(est).set_params(alpha=2.0)).accountant is ledger


def test_budget_ledger_pickle_same_process_is_same_object():
    ledger = BudgetLedger(1.0)
    ledger.spend(PrivacyBudget(0.25))
    est = _Holder(accountant=ledger)
    assert pickle.loads(pickle.dumps(est)).accountant is ledger


def test_budget_ledger_in_other_process_refuses_to_spend():
    ledger = BudgetLedger(1.0)
    ledger.spend(PrivacyBudget(0.25), source="parent")
    # what another process gets when it unpickles the ledger: a token whose
    # pid is not its own -> a read-only snapshot
    token = (os.getpid() + 1, 0, 0)
    clone_ = _restore_budget_ledger(token, ledger.epsilon, ledger.delta, tuple(ledger.spends))
    assert clone_ is not ledger
    assert clone_.spent == PrivacyBudget(0.25)
    with pytest.raises(RuntimeError, match="SQLiteLedger"):
        clone_.spend(PrivacyBudget(0.1))
    assert ledger.spent == PrivacyBudget(0.25)


def _spend_in_forked_child(ledger, queue):
    try:
        ledger.spend(PrivacyBudget(0.1), source="child")
        queue.put("spent")
    except RuntimeError as exc:
        queue.put(f"refused: {exc}")


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_budget_ledger_inherited_by_fork_refuses_to_spend():
    ledger = BudgetLedger(1.0)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_spend_in_forked_child, args=(ledger, q))
    p.start()
    msg = q.get(timeout=30)
    p.join(30)
    assert msg.startswith("refused")
    assert ledger.spends == []


def test_threads_share_budget_ledger():
    ledger = BudgetLedger(10.0)
    ok = []
    refused = []

    def work():
        for _ in range(100):
            try:
                ledger.spend(PrivacyBudget(0.03))
                ok.append(1)
            except BudgetExceededError:
                refused.append(1)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 10 / 0.03 = 333.3.. -> exactly 333 spends fit
    assert len(ok) == 333 == len(ledger.spends)
    assert len(refused) == 800 - 333
    assert ledger.spent.epsilon <= 10.0


# ----------------------------------------------------------------------
# SQLite specifics
# ----------------------------------------------------------------------
def test_sqlite_reopen_budget_is_fixed(tmp_path):
    path = tmp_path / "l.sqlite"
    with pytest.raises(FileNotFoundError, match="no ledger file"):
        SQLiteLedger(path)  # opening never creates: creation needs the budget
    a = SQLiteLedger(path, 2.0, 1e-6)
    a.spend(PrivacyBudget(0.5), source="a")
    b = SQLiteLedger(path)  # opens the stored budget
    assert (b.epsilon, b.delta) == (2.0, 1e-6)
    assert b.spent == PrivacyBudget(0.5)
    SQLiteLedger(path, 2.0, 1e-6)  # same budget: fine
    with pytest.raises(ValueError, match="cannot be changed"):
        SQLiteLedger(path, 3.0, 1e-6)
    with pytest.raises(ValueError, match="cannot be changed"):
        SQLiteLedger(path, 2.0, 0.0)
    # spends through one handle are seen and enforced by the other
    b.spend(PrivacyBudget(1.5), source="b")
    with pytest.raises(BudgetExceededError):
        a.spend(PrivacyBudget(0.01))
    assert [r.who for r in a.spends] == ["a", "b"]


def test_sqlite_pickle_reopens_same_file(tmp_path):
    path = tmp_path / "l.sqlite"
    ledger = SQLiteLedger(path, 1.0)
    again = pickle.loads(pickle.dumps(ledger))
    assert again.path == ledger.path
    again.spend(PrivacyBudget(0.7), source="worker")
    assert ledger.spent == PrivacyBudget(0.7)
    # the file's budget was changed behind our back -> unpickling refuses
    state = pickle.dumps(ledger)
    os.remove(path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)
    SQLiteLedger(path, 5.0)
    with pytest.raises(ValueError, match="cannot be changed"):
        pickle.loads(state)


def _concurrent_worker(path, n_spends, sizes, barrier, queue):
    ledger = SQLiteLedger(path)
    rng = np.random.default_rng(os.getpid())
    barrier.wait()
    ok = []
    for i in range(n_spends):
        eps = float(rng.choice(sizes))
        try:
            ledger.spend(PrivacyBudget(eps, 0.0), source=f"w{os.getpid()}", description=str(i))
            ok.append(eps)
        except BudgetExceededError:
            pass
    queue.put((os.getpid(), ok))


def test_sqlite_concurrent_processes_never_overspend(fast_dir):
    path = os.path.join(fast_dir, "shared.sqlite")
    budget = 50.0
    SQLiteLedger(path, budget, 0.0)
    ctx = _mp_context()
    n_proc, n_spends = 4, 200
    sizes = (0.05, 0.1, 0.15)  # mean 0.1 -> ~80 wanted, 50 available
    barrier = ctx.Barrier(n_proc)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_concurrent_worker, args=(path, n_spends, sizes, barrier, queue))
        for _ in range(n_proc)
    ]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    elapsed = time.perf_counter() - t0
    successes = [eps for _, ok in results for eps in ok]
    records = SQLiteLedger(path).spends
    # every successful spend is recorded exactly once, nothing else is
    assert len(records) == len(successes)
    assert sorted(r.epsilon for r in records) == sorted(successes)
    # each success is recorded under its process's pid; a process that the scheduler started
    # after the others had filled the budget has no success and no record (CI saw it once)
    winners = {pid for pid, ok in results if ok}
    assert {r.pid for r in records} == winners
    assert len(winners) >= 2  # the spends of several processes did interleave
    total = math.fsum(successes)
    assert total <= budget * (1 + 1e-12)
    # some spends were refused, and the budget was (nearly) filled
    assert len(successes) < n_proc * n_spends
    assert total > budget - max(sizes)
    assert elapsed < 60


class _SlowCommitLedger(SQLiteLedger):
    """Signals and then sleeps between its insert and its commit."""

    def _before_commit(self, conn, record):
        self._event.set()
        time.sleep(120)


def _die_inside_transaction(path, event):
    ledger = _SlowCommitLedger(path)
    ledger._event = event
    ledger.spend(PrivacyBudget(0.5), source="doomed", description="never committed")


def _die_after_commit(path, event):
    ledger = SQLiteLedger(path)
    ledger.spend(PrivacyBudget(0.5), source="committed", description="committed once")
    event.set()
    time.sleep(120)


def _die_inside_raw_transaction(path, event):
    # a writer that holds the lock with an uncommitted insert
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO skdp_spends (who, what, epsilon, delta, at, pid) VALUES ('raw', '', 0.9, 0, 0, 0)"
    )
    event.set()
    time.sleep(120)


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
def test_sqlite_killed_process_leaves_ledger_consistent(tmp_path, journal_mode):
    path = str(tmp_path / f"kill-{journal_mode}.sqlite")
    SQLiteLedger(path, 1.0, 0.0, journal_mode=journal_mode)
    ctx = _mp_context()

    def run_and_kill(target):
        event = ctx.Event()
        p = ctx.Process(target=target, args=(path, event))
        p.start()
        assert event.wait(60), "child never reached the kill point"
        os.kill(p.pid, signal.SIGKILL)
        p.join(30)
        assert p.exitcode == -signal.SIGKILL

    # killed between INSERT and COMMIT while holding the write lock
    run_and_kill(_die_inside_transaction)
    run_and_kill(_die_inside_raw_transaction)
    ledger = SQLiteLedger(path, journal_mode=journal_mode)
    assert ledger.spends == []  # not spent at all
    # the lock died with the process: a new spend goes through at once
    t0 = time.perf_counter()
    ledger.spend(PrivacyBudget(0.25), source="after")
    assert time.perf_counter() - t0 < 5
    # killed after COMMIT: spent exactly once
    run_and_kill(_die_after_commit)
    records = ledger.spends
    assert [r.who for r in records] == ["after", "committed"]
    assert ledger.spent == PrivacyBudget(0.75)
    with pytest.raises(BudgetExceededError):
        ledger.spend(PrivacyBudget(0.5))


# ----------------------------------------------------------------------
# composition reports
# ----------------------------------------------------------------------
def test_total_advanced_identical_matches_dwork_roth(ledger_factory):
    ledger = ledger_factory(100.0, 1e-3)
    for _ in range(200):
        ledger.spend(PrivacyBudget(0.01, 1e-7))
    dp = 1e-6
    # Dwork & Roth Thm 3.20 recomputed here: eps sqrt(2k ln(1/d')) + k eps (e^eps - 1)
    eps, k = 0.01, 200
    expect = eps * math.sqrt(2 * k * math.log(1 / dp)) + k * eps * math.expm1(eps)
    adv = ledger.total("advanced", delta_slack=dp)
    assert adv.epsilon == pytest.approx(expect, rel=1e-12)
    assert adv.delta == pytest.approx(k * 1e-7 + dp, rel=1e-12)
    ref = compose_advanced(eps, 1e-7, k, dp)
    assert (adv.epsilon, adv.delta) == pytest.approx((ref.epsilon, ref.delta), rel=1e-12)
    assert ledger.total("basic") == ledger.spent
    assert ledger.spent.epsilon == pytest.approx(2.0, rel=1e-12)


def test_total_advanced_heterogeneous_closed_form():
    ledger = BudgetLedger(1000.0, 0.5)
    rng = np.random.default_rng(3)
    eps = rng.uniform(0.001, 0.05, size=500)
    deltas = rng.uniform(0, 1e-8, size=500)
    for e, d in zip(eps, deltas):
        ledger.spend(PrivacyBudget(float(e), float(d)))
    dp = 1e-5
    expect = np.sqrt(2 * np.log(1 / dp) * np.sum(eps**2)) + np.sum(eps * (np.exp(eps) - 1))
    adv = ledger.total("advanced", delta_slack=dp)
    assert adv.epsilon == pytest.approx(expect, rel=1e-10)
    assert adv.delta == pytest.approx(deltas.sum() + dp, rel=1e-10)
    assert adv.epsilon < ledger.spent.epsilon
    # Kairouz-Oh-Viswanath Thm 3.5 (third bound) is never larger: ours is valid
    kov = np.sqrt(2 * np.log(1 / dp) * np.sum(eps**2)) + np.sum(
        eps * np.expm1(eps) / (np.exp(eps) + 1)
    )
    assert kov <= adv.epsilon


def test_compose_heterogeneous_falls_back_to_basic():
    # few large spends: advanced is worse than basic, basic is returned
    b = compose_heterogeneous([1.0, 0.5], [1e-6, 0.0], 1e-6)
    assert b == PrivacyBudget(1.5, 1e-6)
    assert compose_heterogeneous([], [], 1e-6) == PrivacyBudget.zero()
    with pytest.raises(ValueError):
        compose_heterogeneous([0.1], [0.0, 0.0], 1e-6)
    with pytest.raises(ValueError):
        compose_heterogeneous([0.1], [0.0], 0.0)


# ----------------------------------------------------------------------
# a ledger that cannot be fooled
# ----------------------------------------------------------------------
def test_budget_is_read_only(ledger_factory):
    ledger = ledger_factory(1.0, 1e-6)
    ledger.spend(PrivacyBudget(1.0))
    for name, value in [("epsilon", 1e9), ("delta", 0.5), ("_epsilon", 1e9), ("_delta", 0.5)]:
        with pytest.raises(AttributeError, match="cannot be changed"):
            setattr(ledger, name, value)
    with pytest.raises(BudgetExceededError):
        ledger.spend(PrivacyBudget(0.1))
    assert ledger.budget == PrivacyBudget(1.0, 1e-6)


def test_sqlite_checks_the_budget_stored_in_the_file(tmp_path):
    path = tmp_path / "l.sqlite"
    ledger = SQLiteLedger(path, 1.0)
    ledger.spend(PrivacyBudget(1.0))
    state_before_edit = pickle.dumps(ledger)
    # a second handle cannot raise the budget
    with pytest.raises(ValueError, match="cannot be changed"):
        SQLiteLedger(path, 2.0)
    # the budget row edited behind the API's back: this handle refuses instead of trusting it
    conn = sqlite3.connect(path)
    conn.execute("UPDATE skdp_budget SET epsilon = 1e9")
    conn.commit()
    conn.close()
    with pytest.raises(skdp.LedgerFileError, match="different ledger"):
        ledger.spend(PrivacyBudget(0.5))
    with pytest.raises(ValueError, match="cannot be changed"):
        pickle.loads(state_before_edit)


def _remove_ledger_files(path):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(str(path) + suffix):
            os.remove(str(path) + suffix)


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
def test_missing_truncated_foreign_or_replaced_files_refuse(tmp_path, journal_mode):
    path = tmp_path / "l.sqlite"
    ledger = SQLiteLedger(path, 1.0, journal_mode=journal_mode)
    ledger.spend(PrivacyBudget(0.9))
    state = pickle.dumps(ledger)
    # deleted: spending refuses and unpickling does not recreate a full budget
    _remove_ledger_files(path)
    with pytest.raises(skdp.LedgerFileError, match="missing"):
        ledger.spend(PrivacyBudget(0.5))
    with pytest.raises(skdp.LedgerFileError):
        pickle.loads(state)
    assert not os.path.exists(path)
    with pytest.raises(FileNotFoundError):
        SQLiteLedger(path)
    # replaced by a fresh ledger with the same budget: refused too (different ledger id)
    SQLiteLedger(path, 1.0, journal_mode=journal_mode)
    with pytest.raises(skdp.LedgerFileError, match="different ledger"):
        ledger.spend(PrivacyBudget(0.5))
    with pytest.raises(skdp.LedgerFileError, match="different ledger"):
        pickle.loads(state)
    # truncated to nothing, or cut in the middle
    _remove_ledger_files(path)
    other = tmp_path / "other.sqlite"
    SQLiteLedger(other, 1.0, journal_mode="delete").spend(PrivacyBudget(0.1))
    data = open(other, "rb").read()
    for content in (b"", data[: len(data) // 3], b"not a database at all" * 10):
        with open(path, "wb") as fh:
            fh.write(content)
        with pytest.raises(skdp.LedgerFileError):
            SQLiteLedger(path)
        with pytest.raises(skdp.LedgerFileError):
            SQLiteLedger(path, 1.0)
    # a foreign SQLite database
    _remove_ledger_files(path)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(skdp.LedgerFileError, match="foreign"):
        SQLiteLedger(path, 1.0)


def test_backup_keeps_every_committed_spend_in_wal_mode(tmp_path):
    path = tmp_path / "l.sqlite"
    ledger = SQLiteLedger(path, 100.0, journal_mode="wal")
    for i in range(50):
        ledger.spend(PrivacyBudget(0.5), source="s", description=str(i))
    copy_path = tmp_path / "backup.sqlite"
    copy = ledger.backup(copy_path)
    assert len(copy.spends) == 50 and copy.spent == PrivacyBudget(25.0)
    assert copy.budget == ledger.budget
    with pytest.raises(FileExistsError):
        ledger.backup(copy_path)
    # the backup is self-contained: no -wal file is needed to read it
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(copy_path) + suffix):
            os.remove(str(copy_path) + suffix)
    assert len(SQLiteLedger(copy_path).spends) == 50


def test_old_ledger_files_are_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE skdp_budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL,"
        " delta REAL NOT NULL, created REAL NOT NULL);"
        "CREATE TABLE skdp_spends (id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL,"
        " what TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, at REAL NOT NULL,"
        " pid INTEGER NOT NULL);"
        "INSERT INTO skdp_budget VALUES (1, 1.0, 0.0, 0.0);"
        "INSERT INTO skdp_spends (who, what, epsilon, delta, at, pid) VALUES ('a','b',0.25,0,0,1);"
    )
    conn.commit()
    conn.close()
    ledger = SQLiteLedger(path)
    assert ledger.spent == PrivacyBudget(0.25)
    ledger.spend(PrivacyBudget(0.75))
    with pytest.raises(BudgetExceededError):
        SQLiteLedger(path).spend(PrivacyBudget(0.01))


@pytest.mark.parametrize("seed", [7, "generator", "random_state"])
def test_clones_on_one_ledger_never_share_noise_whatever_the_seed(seed):
    """``clone`` deep-copies a Generator / RandomState given as ``random_state``, so clones
    draw the same words from it; on one ledger each fit's serial still gives it its own
    stream. Two clones fitted on neighbouring data must not have the same noise (else the
    difference of their releases is the exact difference of the statistics), and the same
    holds for int seeds."""
    from skdp.preprocessing import PrivateStandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(500, 2))
    X2 = X.copy()
    X2[0] = [0.25, -0.5]
    rs = {"generator": np.random.default_rng(123),
          "random_state": np.random.RandomState(123)}.get(seed, seed)
    led = BudgetLedger(10.0, 1e-3)
    base = PrivateStandardScaler(epsilon=0.5, delta=1e-6, bounds=(-1, 1), with_std=False,
                                 random_state=rs, accountant=led)
    a, b = clone(base).fit(X), clone(base).fit(X2)
    assert [r.serial for r in led.spends] == [0, 1]
    exact = (X2[0] - X[0]) / len(X)
    # with a shared draw the released difference would be the exact one (up to the grid)
    assert np.all(np.abs((b.mean_ - a.mean_) - exact) > 1e-4)
    # without a ledger the seed reproduces the noise (reproducible experiments)
    free = base.set_params(accountant=None)
    if seed == 7:
        np.testing.assert_array_equal(clone(free).fit(X).mean_, clone(free).fit(X).mean_)


def test_refusal_by_a_pure_ledger_says_that_delta_is_the_problem():
    # review 15: BudgetLedger(1.0) has delta=0 and the classifiers default to delta=1e-5: the
    # first fit was refused without saying which part of the budget was missing
    import numpy as np

    from skdp import BudgetExceededError, BudgetLedger, PrivateLogisticRegression

    X = np.random.default_rng(0).uniform(-0.3, 0.3, (100, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(BudgetExceededError, match="This ledger has delta=0"):
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], epsilon=0.5,
                                  accountant=BudgetLedger(1.0)).fit(X, y)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_accepts_predicts_the_ledgers_decision_without_spending(kind, tmp_path):
    # review 15: under the filter `remaining` does not tell whether a fit is accepted (after a
    # PCA at epsilon 0.5 it showed 0.5 left, yet the classifier at 0.5 was refused)
    import numpy as np

    from skdp import (BudgetExceededError, BudgetLedger, PrivatePCA, PrivateLogisticRegression,
                      SQLiteLedger)
    from skdp.model_selection import PrivateGridSearchCV

    X = np.random.default_rng(0).uniform(-0.3, 0.3, (1000, 5))
    y = (X[:, 0] > 0).astype(int)
    Xnan = X.copy()
    Xnan[0, 0] = np.nan  # no value is read: the answer is the same
    ledger = (BudgetLedger(1.0, 1e-5) if kind == "memory"
              else SQLiteLedger(str(tmp_path / "l.sqlite"), 1.0, 1e-5))
    pca = PrivatePCA(epsilon=0.5, data_norm=1.0, n_components=2, accountant=ledger)
    lr = PrivateLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], accountant=ledger)
    search = PrivateGridSearchCV(lr, {"C": [0.1, 1.0]}, epsilon=0.5, accountant=ledger)
    assert ledger.accepts(pca, X) and ledger.accepts(lr, Xnan, y) and ledger.accepts(search, X, y)
    assert ledger.accepts((0.5, 1e-5)) and not ledger.accepts((2.0, 0.0))
    assert ledger.spends == []
    pca.fit(X)
    predicted = ledger.accepts(lr, X, y)
    try:
        lr.fit(X, y)
        accepted = True
    except BudgetExceededError:
        accepted = False
    assert predicted == accepted
    # the search charges its total, pure here, without a Gaussian curve
    assert ledger.accepts(search, X, y) == ledger.accepts((0.5, 0.0))


@pytest.mark.parametrize("composition", ["basic", "filter"])
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_accepts_a_pipeline_checks_every_private_step_before_any_charge(kind, composition,
                                                                       tmp_path):
    # review 18, F15: a Pipeline charges once per private step, and an error that a later
    # step's public settings decide came after the earlier steps were charged; accepts
    # refused Pipelines, so nothing could tell it for free
    import numpy as np
    from sklearn.pipeline import make_pipeline

    from skdp import BudgetExceededError, BudgetLedger, PrivateLogisticRegression, SQLiteLedger
    from skdp.decomposition import PrivatePCA
    from skdp.preprocessing import PrivateRowNormScaler

    X = np.random.default_rng(0).normal(size=(500, 4))
    y = (X[:, 0] > 0).astype(int)
    ledger = (BudgetLedger(1.0, 1e-5, composition=composition) if kind == "memory"
              else SQLiteLedger(str(tmp_path / "l.sqlite"), 1.0, 1e-5, composition=composition))

    def pipe(eps_lr, **bad):
        return make_pipeline(
            PrivateRowNormScaler(quantile=0.95, epsilon=0.3, norm_range=(1e-2, 1e4),
                                 accountant=ledger),
            PrivatePCA(2, epsilon=0.2, delta=1e-6, data_norm=1.0, accountant=ledger),
            PrivateLogisticRegression(epsilon=eps_lr, delta=1e-6, data_norm=1.0,
                                      accountant=ledger, **{"classes": [0, 1], **bad}))

    for bad, match in (({"classes": [1]}, "at least two class labels"),
                       ({"mechanism": "no_such_mechanism"}, "mechanism")):
        with pytest.raises(ValueError, match=match):
            ledger.accepts(pipe(0.4, **bad), X, y)
    assert ledger.spends == []
    # the prediction is the fit's outcome, on a fresh ledger each time and after spends
    outcomes = []
    for i, eps_lr in enumerate((0.1, 0.4, 0.45, 0.6)):
        fresh = (BudgetLedger(1.0, 1e-5, composition=composition) if kind == "memory"
                 else SQLiteLedger(str(tmp_path / f"f{i}.sqlite"), 1.0, 1e-5,
                                   composition=composition))
        ledger = fresh
        for _ in range(2):  # twice: the second time after the first pipeline's three spends
            predicted = ledger.accepts(pipe(eps_lr), X, y)
            before = len(ledger.spends)
            try:
                pipe(eps_lr).fit(X, y)
                accepted = True
            except BudgetExceededError:
                accepted = False
            assert predicted == accepted, (eps_lr, before)
            outcomes.append(accepted)
    assert False in outcomes
    if composition == "basic":  # (the filter gives all of delta to its first Gaussian fit)
        assert True in outcomes


def test_accepts_sees_the_fits_curve_and_what_the_fit_itself_decides():
    # review 17: the probe was not given the Gaussian curve, so the filter judged a Gaussian fit
    # as a plain (epsilon, delta) spend and refused fits it accepts; a search on a DataFrame
    # (columns by name) and a fit that charges nothing made accepts raise
    import numpy as np
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skdp import BudgetLedger, PrivateLogisticRegression, PrivateOLS
    from skdp.model_selection import PrivateGridSearchCV
    from skdp.preprocessing import PrivateStandardScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (2000, 3))
    y = X @ [0.3, -0.2, 0.1]
    ledger = BudgetLedger(0.6, 1e-5)
    ledger.spend((0.05, 0.0))
    ols = PrivateOLS(epsilon=0.5, data_norm=1.0, label_bound=1.0, accountant=ledger)
    assert ledger.accepts(ols, X, y)
    ols.fit(X, y)
    assert len(ledger.spends) == 2
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    pipe = Pipeline([("ct", ColumnTransformer([("n", "passthrough", ["a", "b"])])),
                     ("clf", PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]))])
    fresh = BudgetLedger(1.0, 1e-5)
    search = PrivateGridSearchCV(pipe, {"clf__C": [0.1]}, epsilon=0.5, accountant=fresh)
    assert fresh.accepts(search, df, (y > 0).astype(int))
    assert fresh.accepts(PrivateStandardScaler(with_mean=False, with_std=False,
                                               bounds=(-1, 1), accountant=fresh), X)
    assert fresh.spends == []


def test_accepts_a_pipeline_asks_each_steps_own_accountant():
    # review 21, F3/F4: every step's charge was counted against the asked ledger (a step on
    # another, exhausted ledger was accepted, then refused after this ledger was charged), and
    # a scalar step__sample_weight raised IndexError
    import numpy as np
    from sklearn.pipeline import make_pipeline

    from skdp import BudgetExceededError, BudgetLedger, PrivateLogisticRegression
    from skdp.decomposition import PrivatePCA

    X = np.random.default_rng(0).normal(size=(400, 4)) / 3
    y = (X[:, 0] > 0).astype(int)
    led = BudgetLedger(1.5, 1e-3, composition="basic")
    for other, expected in ((BudgetLedger(5.0, 1e-3, composition="basic"), True),
                            (BudgetLedger(0.5, 1e-3, composition="basic"), False),
                            (None, True)):
        pipe = make_pipeline(
            PrivatePCA(2, epsilon=1.0, delta=1e-6, data_norm=1.0, accountant=led),
            PrivateLogisticRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, classes=[0, 1],
                                      accountant=other))
        assert led.accepts(pipe, X, y) is expected
        assert led.accepts(pipe, X, y,
                           privatelogisticregression__sample_weight=np.float64(0.5)) is expected
        assert led.spends == []
        # the prediction is the fit's outcome (on a copy of the asked ledger's state)
        fresh = BudgetLedger(1.5, 1e-3, composition="basic")
        pipe.steps[0][1].set_params(accountant=fresh)
        try:
            pipe.fit(X, y)
            outcome = True
        except BudgetExceededError:
            outcome = False
        assert outcome is expected


def test_a_pure_release_is_charged_no_delta():
    # review 27, F1: mechanism="auto" releasing by the grid Laplace (exactly epsilon-DP) was
    # charged the delta it was given, which a filtering ledger then converted for nothing
    import warnings

    X = np.random.default_rng(0).normal(size=(2000, 5)) / 3
    y = (X[:, 0] > 0).astype(int)
    led = BudgetLedger(epsilon=20.0, delta=1e-5)
    out = skdp.PrivateLogisticRegression(perturbation="output", epsilon=0.5, delta=1e-6,
                                         data_norm=1, classes=[0, 1], accountant=led)
    pca = skdp.PrivatePCA(2, epsilon=0.5, delta=1e-6, data_norm=1, accountant=led)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert led.accepts(out, X, y)
        out.fit(X, y)
        assert out.noise_spec_.mechanism_.pure  # the release is pure: what auto chose
        assert out.privacy_spent_ == PrivacyBudget(0.5, 0.0)
        assert led.spends[-1].delta == 0.0
        pca.fit(X)  # a Gaussian release: charged its delta and its curve
        assert not pca.noise_spec_.mechanism_.pure
        assert pca.privacy_spent_ == PrivacyBudget(0.5, 1e-6) and led.spends[-1].mu
        for _ in range(3):  # before, the second output fit was refused after the PCA fit
            clone(out).fit(X, y)
    assert [s.delta for s in led.spends] == [0.0, 1e-6, 0.0, 0.0, 0.0]


def test_a_filter_ledger_unpickled_in_another_process_accepts_as_the_original():
    # review 26, F2: the snapshot kept the records but not the filter's state, so its
    # accepts() answered as if nothing had been spent
    ledger = BudgetLedger(1.0, 1e-5)  # composition="filter"
    ledger.spend(PrivacyBudget(0.9))
    token = (os.getpid() + 1, 0, 0)  # as in another process
    snap = _restore_budget_ledger(token, ledger.epsilon, ledger.delta, tuple(ledger.spends),
                                  ledger.composition)
    for ask in (PrivacyBudget(0.5), PrivacyBudget(0.05)):
        assert snap.accepts(ask) == ledger.accepts(ask)
    assert not snap.accepts(PrivacyBudget(0.5))


def test_accepts_and_spend_take_an_epsilon_delta_list_like_a_tuple():
    # review 26, F5: accepts() listed lists among its budgets and then raised TypeError
    ledger = BudgetLedger(1.0, 1e-5)
    assert ledger.accepts([0.1, 0.0]) == ledger.accepts((0.1, 0.0)) is True
    ledger.spend([0.1, 0.0])
    assert ledger.spent == PrivacyBudget(0.1)
    with pytest.raises(TypeError, match="pair"):
        ledger.accepts([0.1, 0.0, 0.0])


def test_a_pure_release_does_not_warn_about_a_large_delta():
    # review 30: a fit charged (epsilon, 0) warned LargeDeltaWarning for the delta it did not
    # spend; a Gaussian release with the same delta still warns
    import warnings

    X = np.random.default_rng(0).normal(size=(300, 1)) / 3
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", skdp.LargeDeltaWarning)
        est = skdp.PrivateLogisticRegression(perturbation="output", data_norm=1, classes=[0, 1],
                                             delta=0.004).fit(X, y)
    assert est.noise_spec_.mechanism_.pure and est.privacy_spent_.delta == 0.0
    with pytest.warns(skdp.LargeDeltaWarning):
        skdp.PrivateLogisticRegression(perturbation="output", data_norm=1, classes=[0, 1],
                                       delta=0.004, mechanism="analytic_gaussian").fit(X, y)
