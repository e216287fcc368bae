r"""Private empirical risk minimisation for linear classifiers (one core, three routes).

This module is the shared core of :class:`~skdp.linear_model.PrivateLogisticRegression`
and :class:`~skdp.linear_model.PrivateHuberSVM`. All noise is calibrated and
sampled by the mechanism core (:func:`skdp.mechanisms.calibrate`); this module
only states the query (shape and sensitivity) and the budget.

Setting and notation
--------------------
Neighbouring relation: **replace-one record, n public**. Rows ``x`` are
clipped to the public bound ``data_norm`` (``B``). With ``fit_intercept`` the
row is augmented with a constant column ``s = intercept_scaling * B`` (a
public constant), so the augmented row ``u = [x, s]`` has norm at most

    R = sqrt(B^2 + s^2)            (R = B without intercept).

The intercept is the last augmented coefficient times ``s``: it is penalised
and privatised like every other coefficient (no non-private intercept).

The augmented rows are never formed: the clip factors ``a_i = min(1, B /
||x_i||)`` (row norms computed once, in float64) and ``s`` are applied inside
the products ``U @ W^T = a * (X @ W[:, :d]^T) + s W[:, d]`` and ``A^T @ U =
[(a * A)^T @ X, s sum_i A_i]`` (:class:`~skdp.linear_model._rows.RowOperator`),
so dense float64 / float32 (memmaps included) and ``scipy.sparse`` CSR/CSC
input is read in place; every product and reduction runs in float64. This is
an implementation of the same ``u_i``: none of the bounds below changes.

Multiclass problems are solved one-vs-rest **jointly**: ``K`` binary problems
(``K = 1`` for two classes) with labels ``y_ik in {-1, +1}`` share the rows;
the stacked parameter is ``W`` of shape ``(K, p)``. Every route below treats
the stacked problem as one release (no budget split), with the sensitivities
derived for the stack: one record enters all ``K`` problems, so every
per-problem bound is multiplied by ``sqrt(K)`` in Frobenius norm (output,
objective and gradient noise) and determinant bounds get the exponent ``K``.

Objective (``lambda`` tied to ``C``)::

    J_D(W) = (1/n) sum_i sum_k loss(y_ik <w_k, u_i>) + (lambda/2) ||W||_F^2,
    lambda = 1 / (n C).

Multiplying by ``n C`` gives scikit-learn's ``C sum loss + 1/2 ||W||^2``, so
``C`` means what it means in :class:`sklearn.linear_model.LogisticRegression`
(except that the intercept is penalised too). Losses of ``z = y <w, u>``:
``log(1 + e^-z)`` (logistic) and the Huber hinge (Chaudhuri et al. 2011 [1]_,
eq. 7; Liu et al. 2026, section 3.1, with the ``/h`` the paper's print drops). Both have
``|loss'| <= 1`` (so ``loss(y <w, u>)`` is ``R``-Lipschitz in ``w``) and
``0 <= loss'' <= c`` with ``c = 1/4`` (logistic) and ``c = 1/(2h)`` (Huber);
the smoothness of one term in ``w`` is ``beta = c R^2``.

Solver accuracy (all deterministic routes)
------------------------------------------
Sensitivity bounds below hold for the *exact* minimiser. The solver
(:func:`skdp.linear_model._solver.minimize`: a fast first stage, then a
globally convergent damped Newton, then Nesterov's accelerated gradient with
a public iteration cap) always returns a point whose gradient norm is at most
the public tolerance ``gamma = max(tol * R / n, 4 e_0)`` (``e_0`` the public
floating-point floor of the certificate, :func:`~skdp.linear_model._solver.float_floor`;
it exceeds ``tol R / n`` only beyond about a million rows): it has no
failure exit, so whether a model is released never depends on the data. The
rows are the computed ones, of norm at most ``R' = R (1 + gamma_{d+10})``
(:func:`skdp._stats.computed_row_bound`), and the sensitivities below use
``R'`` where they read ``R``. With ``mu``-strong
convexity, ``||W~ - W*||_F <= gamma / mu`` for the returned ``W~``.

Output perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1 / Cor. 8)
----------------------------------------------------------------------------
For neighbours, ``J_D - J_D'`` is ``g/n`` with ``g`` the difference of the two
records' loss terms, whose gradient has Frobenius norm at most
``2 R sqrt(K)``. By ``lambda``-strong convexity of ``J_D'``,
``||W*_D - W*_D'||_F <= 2 R sqrt(K) / (n lambda) = 2 sqrt(K) R C`` (note: with
the scikit-learn meaning of ``C``, ``n`` cancels -- DP needs a small ``C``).
With the solver error on both sides the released ``W~`` has

    Delta_out = 2 sqrt(K) R C + 2 gamma / lambda,

and ``W~ + noise`` with noise from ``calibrate(Query((K, p), l2_sensitivity=Delta_out),
epsilon, delta, mechanism)`` is (epsilon, delta)-DP. The seed-004 reference
code calibrated ``2/(n lambda)`` while training with ``C = 1/lambda`` (n-fold
under-noising) and did not clip rows: here ``lambda`` and ``C`` are tied by
one formula and rows are always clipped.

Objective perturbation
----------------------
Minimise ``J_D(W) + (Lambda_x / 2) ||W||^2 + <b, W>``; write
``lambda' = lambda + Lambda_x`` (strong convexity). The minimiser ``W*`` and
the noise are in bijection, ``b = -grad J~_D(W*)`` with
``J~ = J + Lambda_x/2 ||.||^2``, so the density of ``W*`` is
``nu(b_D(W)) |det H_D(W)|`` (``nu`` the noise density, ``H_D`` the Hessian
of ``J~_D``; Chaudhuri et al. 2011, proof of Thm 9).

*Jacobian.* ``H_D = A + h u u^T`` (per class block) and
``H_D' = A + h' u' u'^T`` with the common part ``A >= lambda' I`` and
``h, h' in [0, c/n]``. By the matrix determinant lemma
``det H_D / det H_D' <= det(A + h u u^T) / det A <= 1 + c R^2 / (n lambda')``
per block, so over the ``K`` blocks the log-ratio is at most

    eps_J = K log(1 + beta / (n lambda')),   beta = c R^2.

(Chaudhuri et al.'s Alg. 2 uses ``2 log(1 + c/(n lambda))`` for ``K = 1``:
the determinant-lemma bound above is tighter and equally rigorous.)

*Noise.* ``b_D(W) - b_D'(W)`` is ``(1/n)`` times the difference of the two
records' loss gradients: Frobenius norm at most ``Delta_obj = 2 sqrt(K) R / n``,
and it lies in the fixed subspace spanned (per class block) by ``u`` and
``u'``, of dimension ``m <= min(2K, K p)``.

* ``delta = 0`` (Chaudhuri et al. 2011, Alg. 2): ``b`` with a density whose
  ratio under a shift of norm ``Delta_obj`` is at most ``e^eps_3``
  pointwise, so ``W*`` is ``(eps_3 + eps_J)``-DP. Chaudhuri et al. take
  ``exp(-||b|| / s)`` (``mechanism="gamma_norm"``, drawn in floating point);
  ``"auto"`` (and ``"laplace"``) takes the piecewise-constant density of
  ``g (Y + U)``, ``Y`` i.i.d. discrete Laplace on a fine grid ``g``, ``U``
  uniform on the cell, which is sampled exactly (next paragraphs, "Floating-point
  safety of the objective route"); it is calibrated through
  ``l1 <= sqrt(k) l2``, about twice the gamma-norm's expected squared error.
* ``delta > 0`` (approximate minima perturbation, Iyengar et al. 2019 [2]_,
  Alg. 1): Gaussian ``b ~ N(0, sigma_1^2 I)``. The noise log-ratio at ``W``
  is ``(2 <b, v> + ||v||^2) / (2 sigma_1^2) <= rho a + a^2 / 2`` with
  ``a = Delta_obj / sigma_1`` and ``rho = ||P b|| / sigma_1 ~ chi_m`` (``P``
  the projection on that subspace). The hockey-stick divergence at
  ``e^eps_1`` is therefore at most

      delta_1(a) = E_rho[(1 - exp(eps_3 - a rho - a^2/2))_+],  eps_3 = eps_1 - eps_J,

  (:func:`amp_noise_delta`), and ``sigma_1`` is the smallest value with
  ``delta_1 <= delta_1``-budget. This replaces the Gaussian tail bounds of
  Kifer et al. [3]_ / Iyengar et al. by an exact expectation of the bound; the
  core samples the noise (``analytic_gaussian`` with the effective
  sensitivity ``sigma_1 mu0(eps_3, delta_1)``, which makes its sigma
  exactly ``sigma_1``).

*K classes, and the sign of the loss derivative (``delta > 0``).* The
``chi_{2K}`` bound above lets ``v`` align with ``b`` in all ``2K``
dimensions at once, at full norm. Per block ``k``, ``v_k = (loss'(z_k) y_k u
- loss'(z'_k) y'_k u') / n`` (times the records' weights in ``[0, 1]``), and
both losses are non-increasing, ``loss'`` in ``[-1, 0]``: the coefficients
have a fixed sign whatever ``W``, ``v_k = (R / n) (s_k d_k + s'_k d'_k)``
with ``s_k, s'_k`` in ``[0, 1]`` and the fixed vectors ``d_k = -y_k u / R``,
``d'_k = y'_k u' / R`` of norm at most 1. With ``a1 = R / (n sigma_1)`` and the
unit vectors ``d^_k``, ``d'^_k``::

    <b, v> / sigma_1^2 <= a1 sum_k S_k,  S_k = ((<b_k, d^_k>)_+ + (<b_k, d'^_k>)_+) / sigma_1,
    ||v||^2 / (2 sigma_1^2) <= 2 K a1^2.

``S_k = (x_1)_+ + (x_2)_+`` for standard normals of correlation ``c_k =
<d^_k, d'^_k>``, independent across the blocks (``b_k`` are). Writing
``x_{1,2} = (alpha z_1 +- beta z_2) / 2`` (``alpha = sqrt(2 + 2c)``,
``beta = sqrt(2 - 2c)``, independent ``z``), ``S_k = max(0, alpha z_1,
(alpha z_1 + beta |z_2|) / 2)``, and conditioning on ``|z_2|`` gives its
survival function as a one-dimensional integral, bounded above on a grid of
``c`` cell by cell (monotone in ``alpha`` and ``beta``; upper Riemann sums)
and by ``Q(s/2) + 2 Q(s)`` for every ``c``
(:func:`_signed_block_survival`). ``1 -`` that bound is the CDF of a variable
``Y`` that stochastically dominates every ``S_k``, so ``sum_k S_k`` is
dominated by a sum of ``K`` independent copies of ``Y`` (coupling), and as
the integrand is increasing,

    delta_1 <= E[(1 - exp(eps_3 - a1 sum_k Y_k - 2 K a1^2))_+]

(:func:`amp_multiclass_delta`: ``Y`` rounded up to a grid of step 0.01, the
``K``-fold sum by convolution, the mass beyond the grid counted as 1). The
code uses the smaller of the two scales for every ``K`` (both are valid).
The sign matters: with coefficients of either sign ``S_k`` would be
``|<b_k, d^_k>| + |<b_k, d'^_k>|`` (mean up to ``2 sqrt(2/pi)`` instead of
``2 / sqrt(2 pi)``), which the bound used until the sign was exploited
(Monte Carlo on explicit records shows such records exceed the present
bound, ``tests/test_erm.py``). Noise against that former bound, ``delta_1 =
1e-5``, ``eps_3 = 0.09 / 0.5 / 0.9``: 1.06x / 1.05x / 1.04x less for ``K = 1``,
1.11x / 1.09x / 1.08x for ``K = 2``, 1.29x / 1.26x / 1.24x for ``K = 10``,
1.45x / 1.43x / 1.42x for ``K = 50``; against the ``chi_{2K}`` bound the
total is printed by ``benchmarks/bench_dpsgd_accounting.py``. Monte Carlo of
the exact worst-case privacy loss on explicit records (every angle between
them, labels equal or alternating across blocks) stays below the bound for
``K = 1, 2, 4`` (``tests/test_erm.py``).

*Approximate minimiser.* The solver returns ``W~`` with
``||W~ - W*|| <= gamma / lambda'``. Releasing ``W~ + n_2`` is analysed as an
adaptive composition: given the (virtual) output ``a = W*``, ``W~`` is a
function of ``(D, a)`` (the noise is ``b_D(a)``) whose change between
neighbours is at most ``2 gamma / lambda'``; so ``n_2`` is calibrated for
that sensitivity at ``(eps_2, delta_2)`` and the release is
``(eps_1 + eps_2, delta_1 + delta_2)``-DP (Iyengar et al. 2019, Thm 1, with
the replace-one factor 2). Seed 004's reference code drew both noises from
the same ``(R, h)`` and retried with fresh noise on solver failure; here the
two draws are independent and the tolerance is fixed in advance.

*Floating-point safety of the objective route.* ``b`` is never released,
but the analysis above is for a continuous Gaussian ``b`` and a
floating-point sampler is not one. The AMP route therefore draws
``b = g_b Y`` with ``Y`` from the exact discrete Gaussian ``N_Z(0, (sigma_1
/ g_b)^2)`` (Canonne, Kamath & Steinke 2020) on a public power-of-two grid
``g_b`` (:func:`_objective_noise_grid`: the shift below at most ``1e-3
gamma``, the scale at most ``2^40`` grid steps). Coupling: the law of ``Y`` is
within total variation ``tau`` of ``round(b_c / g_b)`` for a continuous
``b_c ~ N(0, sigma_1^2 I)`` (:func:`skdp.mechanisms._grid.discrete_gaussian_tv_reserve`,
reserved from ``delta_1`` before ``sigma_1`` is calibrated), and then
``||b - b_c|| <= g_b sqrt(k) / 2 =: s_b`` (``k = K p``). The minimiser is
``1/lambda'``-Lipschitz in ``b`` (strong convexity), so the released
solver output ``W~`` is within ``(gamma + s_b) / lambda'`` of the exact
minimiser ``W*(b_c)`` of the continuous mechanism: the argument above holds
with ``gamma + s_b`` in place of ``gamma`` in the solver-error noise
(``Delta_2 = 2 (gamma + s_b) / lambda'``), plus the reserve. The solver's
certificate ``||grad F(W~)|| <= gamma`` holds for the exact gradient: its
floating-point evaluation error is bounded and added before the test
(:mod:`skdp.linear_model._solver`, "The certificate in floating point").

The pure route (``delta = 0``) has no delta to reserve for a sampler's total
variation, so it uses a density that is exactly sampleable: ``b_c = g (Y +
U)`` with ``Y`` i.i.d. discrete Laplace(``t``) on the integers (CKS 2020,
Algorithm 2: integer arithmetic only) and ``U`` uniform on
``[-1/2, 1/2]^k``, i.e. the density ``P(round(b / g)) / g^k``. For ``b`` and
``b + v`` with ``||v|| <= Delta_obj`` the cells' indices differ by at most
``||v||_1 / g + k <= sqrt(k) Delta_obj / g + k`` in l1, so the density
ratio is at most ``e^eps_3`` for ``t = ceil((sqrt(k) Delta_obj / g + k) /
eps_3)`` (:func:`_pure_objective_noise`): Chaudhuri et al.'s argument holds
for this density. The fit draws only ``Y`` and uses ``b = g Y``, within
``s_b = g sqrt(k) / 2`` of ``b_c`` (the uniform part is never drawn): as for
AMP, ``s_b`` joins the solver tolerance in the solver-error noise, whose
Laplace release on the grid is exact too. The grid is
:func:`_objective_noise_grid`'s (``s_b <= 1e-3 gamma``).

*Budget split* (public): ``eps_2 = 0.01 eps``, ``delta_2 = 0.01 delta``,
``eps_1 = eps - eps_2``; within ``eps_1`` Iyengar et al.'s hyperparameter-free
"strategy 1" fraction ``f(eps)`` targets ``eps_J = (1 - f) eps_1``: the
extra regularisation is ``Lambda_x = max(0, beta / (n (e^(eps_J/K) - 1)) - lambda)``.

Choosing C (``C="auto"``, the default)
--------------------------------------
With scikit-learn's ``C = 1`` the output sensitivity ``2 sqrt(K) R C`` does
not shrink with ``n`` and the noise swamps the model. ``C="auto"`` picks
``lambda`` by a rule that reads only public inputs -- ``n``, the shape
``(K, p)``, ``R``, the loss curvature ``c``, ``(epsilon, delta)``, the
mechanism -- never the data; the value used is stored in ``C_ = 1 / (n
lambda)`` and an explicit ``C`` is used as given (objective perturbation
raises its ``lambda`` to what the Jacobian term needs, "Budget split" above;
``C_`` reports the value used). The rule minimises an upper
bound on the expected excess (unregularised) empirical risk
``L(W) = (1/n) sum_i sum_k loss(y_ik <w_k, u_i>)`` of the release against a
comparator ``W°`` of norm ``r``; ``r`` is not known, so the rule fixes
``r R = 5`` (a comparator whose margins reach 5 on the largest rows; chosen
a priori on scikit-learn's breast-cancer data and an 8000 x 20 synthetic
problem, not on the benchmark table). ``v(eps, delta)`` below is the expected
squared norm of the noise the core calibrates for l2 sensitivity 1 (public).

*Output perturbation.* ``W*`` minimises ``L + lambda/2 ||W||^2``, so
``L(W*) <= L(W°) + lambda r^2 / 2``. ``L`` is ``c R^2``-smooth per class
block, so for the zero-mean noise ``Z`` independent of ``W*``,
``E L(W* + Z) <= L(W*) + c R^2 E||Z||^2 / 2`` with
``E||Z||^2 = v Delta_out^2`` and ``Delta_out = a R / (n lambda)``,
``a = 2 sqrt(K) + 2 tol``. Minimising ``lambda r^2 / 2 + c v a^2 R^4 /
(2 n^2 lambda^2)`` over ``lambda``:

    lambda = (2 c v a^2 R^4 / (n r)^2)^(1/3).

*Objective perturbation.* The minimiser ``W_b`` of ``L + lambda'/2 ||W||^2 +
<b, W>`` satisfies ``L(W_b) <= L(W°) + lambda' r^2/2 + <b, W° - W_b> -
lambda' ||W_b||^2 / 2 <= L(W°) + lambda' r^2 / 2 + <b, W°> + ||b||^2 /
(2 lambda')``, and ``E <b, W°> = 0``: the bound is ``lambda' r^2 / 2 +
v(eps_3, delta_1) Delta_obj^2 / (2 lambda')``. Here ``lambda'`` also fixes
the Jacobian share ``eps_J = K log(1 + beta / (n lambda'))`` and hence the
noise budget ``eps_3 = eps_1 - eps_J``, so the rule minimises the bound over a
public grid of ``eps_J / eps_1`` in ``[0.02, 0.8]`` (taking at each point the
larger of the Jacobian's ``lambda'`` and the bound's unconstrained optimum
``sqrt(v) Delta_obj / r``) and uses that ``lambda'`` in place of Iyengar et
al.'s fixed strategy (which a too-large smoothness, e.g. the Huber hinge at
small epsilon, turns into a regularisation so strong that the model predicts
one class). ``v`` is the analytic Gaussian's (``delta > 0``) or the pure
mechanism's at ``(eps_3, delta_1)``; the privacy analysis does not depend on
the rule (it holds for every ``lambda'`` with ``eps_J < eps_1``).

*Gradient perturbation.* The number of steps and the clipping regularise;
``C="auto"`` is scikit-learn's ``C = 1`` there.

Choosing intercept_scaling (default 1/2)
----------------------------------------
The constant column ``s = sigma B`` enlarges every sensitivity through
``R = B sqrt(1 + sigma^2)``, and an intercept ``t`` costs the coefficient
``t / s`` in the penalty. At their optimal ``lambda`` the excess-risk bounds
above grow with ``r R`` (objective: ``r R`` times public factors; output:
``(r R)^(4/3)``; the gradient route's noise term: ``r R``). For a comparator
``W° = (w, t / s)`` whose intercept is ``rho`` times the features' largest
margin ``||w|| B``,

    (r R)^2 = (||w|| B)^2 (1 + sigma^2) (1 + rho^2 / sigma^2),

minimised at ``sigma^2 = rho`` with value ``(||w|| B)^2 (1 + rho)^2``. The
ratio to that best value is largest at the ends of a range ``rho in [0,
rho_max]``; equalising the two ends gives the minimax
``sigma^2 = rho_max / (2 + rho_max)``. ``rho`` is private (it depends on the
class balance), so the default fixes ``rho_max = 2/3``: ``sigma = 1/2``,
within ``sqrt(1.25) = 1.118`` of the best ``r R`` for every intercept up to
two thirds of the features' margin (the former default ``sigma = 1`` is
``sqrt 2`` off for a zero intercept; ``tests/test_erm.py`` checks the
minimax numerically). Measured (``benchmarks/bench_classifiers.py``
tables, 6 seeds, epsilon = 0.1, objective route): 1/2 instead of 1 gains 0.6
points on a balanced 20 000 x 20 table, 2.0 on 20 000 x 100, 2.0 on a 75/25
table and 4.2 on breast cancer; on 95/5 and 99/1 tables it stays at or above
the majority class, where ``sigma = 1/4`` (better on balanced tables) falls
below it. A larger ``intercept_scaling`` suits strongly imbalanced classes.

Number of steps (gradient route, ``max_iter="auto"``)
-----------------------------------------------------
Like ``C``, the number of steps ``T`` is chosen by a public rule
(:func:`default_gradient_steps`; ``n``, the shape, the loss curvature, the
budget and the mechanism, never the data), and any ``T`` is private (the
calibration below is for the ``T`` used). Accelerated gradient descent on a
``c R^2``-smooth loss with comparator norm ``r`` has optimisation error about
``a / T^2``, ``a = 2 c (r R)^2``; the Gaussian noise of ``T`` full-batch steps
(separation ``mu`` of (epsilon, delta), per-step standard deviation
``2 clip sqrt(T) / mu`` with ``clip = sqrt(K) R``) adds about
``r * 2 sqrt(K) R sqrt(T) sqrt(K p) / (n mu) = b sqrt(T)``. Minimising
``a / T^2 + b sqrt(T)`` gives ``T = (4 a / b)^(2/5)``; under basic composition
(pure or named mechanisms) the noise grows like ``b T`` with
``b = 2 (r R) K p / (n epsilon)`` and ``T = (2 a / b)^(1/3)``. With ``r R = 5``
(as for ``C``), ``T`` is capped at ``sqrt(a / tau)`` with ``tau = 1e-3``
(beyond it the optimisation-error bound is below a thousandth of a nat, and
the noise term only shrinks with fewer steps, so the cap raises the whole
bound by at most ``tau``; without it ``T`` grows like ``n^0.4``, 284 steps at
``n = 10^7``), rounded up and kept in ``[20, 1000]``: 20 steps at ``n =
3000``, 59 at ``n = 2 10^5`` and 112 (the cap, for the logistic loss) from
``n = 10^6`` (``p = 101``, epsilon 1, delta ``1e-5``). This replaces the
former fixed 1000 steps (a fit 60 to 100 times slower than scikit-learn's).
An explicit integer ``max_iter`` is used as given.

Gradient perturbation (DP-GD / DP-SGD)
--------------------------------------
As in DP-SGD (Abadi et al. 2016 [4]_), per-example gradients of the loss
part, ``G_i = a_i u_i^T`` with
``a_ik = y_ik loss'(z_ik)``, are clipped to Frobenius norm ``clip``
(default ``sqrt(K) R``, which they never exceed); the regulariser's gradient
``lambda W`` is data-free. The sum of clipped gradients changes by at most
``2 clip`` under replace-one.

* Full batch (``batch_size=None``): ``T`` noisy steps with Gaussian noise
  ``sigma`` compose to a single Gaussian with separation
  ``mu = sqrt(T) 2 clip / sigma`` (Dong, Roth & Su 2022, GDP composition), so
  ``sigma`` is the core's analytic Gaussian for l2 sensitivity
  ``2 clip sqrt(T)`` at (epsilon, delta) -- exact.
* Poisson subsampling at rate ``q = batch_size / n``: the noise multiplier is
  found with Google's ``dp-accounting`` privacy-loss-distribution accountant
  [5]_ for the **replace-one** relation directly: one step's worst case is the
  pair ``(1-q) N(0) + q N(-C')`` vs ``(1-q) N(0) + q N(C')`` with ``C'`` the
  per-record radius (``clip`` plus the grid rounding below), not the
  replace-one sensitivity ``2 clip`` of the sum (derivation and the check of
  the worst case in :mod:`skdp._accounting`).
* A named pure mechanism (``delta = 0``) or any other named mechanism: basic
  composition, ``(eps/T, delta/T)`` per step, sensitivity ``2 clip``
  (full batch only).

Floating point: the sum is computed, so the sensitivity above is taken for
the computed per-example gradients (norm at most ``clip (1 + gamma_{p+K+12})``)
plus twice the rounding bound of their chunked sum
(:func:`_step_sum_rounding`, Higham 2002; relative to the sensitivity about
``2e-7`` at a million dense rows of 100 features, ``6e-5`` for sparse input,
whose one product over all rows has depth ``n``).

The noisy sum is divided by the public expected batch size ``q n``; steps use
Nesterov momentum with step size ``learning_rate`` (default ``1 / (beta_avg +
lambda)``) and all of this is post-processing.

Sample and class weights
------------------------
``fit(X, y, sample_weight)`` and ``class_weight`` (a public dict) give record
``i`` the weight ``w_i = class_weight[y_i] * sample_weight_i`` with the
**public bound** ``0 <= w_i <= 1`` (a sample weight outside it raises after
the charge, which is kept: the values are private; a ``class_weight`` outside
it raises before). The objective becomes

    J_D(W) = (1/n) sum_i w_i sum_k loss(y_ik <w_k, u_i>) + (lambda/2) ||W||_F^2,

with the public ``n`` as the normaliser (a zero weight removes a record's loss
term, not its share of ``n``). Under replace-one the record ``(w, x, y)`` is
replaced by ``(w', x', y')`` whole. Each step of the derivations above, with
the weights:

* *Convexity and smoothness.* Each term ``w_i loss(.)`` is convex
  (``w_i >= 0``) and ``w_i c R^2 <= c R^2``-smooth, so ``J_D`` is
  ``lambda``-strongly convex and the solver's ``L = c R^2 + lambda``,
  its ``gamma`` certificate and the Nesterov cap hold unchanged.
* *Output perturbation.* ``J_D - J_D'`` is ``g/n`` with ``g = w l(u, y) -
  w' l(u', y')``; ``||grad g||_F <= w sqrt(K) R + w' sqrt(K) R <= 2 sqrt(K)
  R``, so ``Delta_out`` is unchanged (Chaudhuri et al. 2011, Lemma 7, needs
  only this gradient bound and the strong convexity of ``J_D'``).
* *Objective perturbation, Jacobian.* Record ``i`` contributes ``h_i u_i
  u_i^T`` with ``h_i = w_i loss''(.) / n in [0, c/n]`` (as ``w_i <= 1``), the
  rest ``A >= lambda' I`` comes from the regulariser: the determinant-lemma
  bound ``eps_J = K log(1 + beta / (n lambda'))`` is unchanged.
* *Objective perturbation, noise.* ``b_D(W) - b_D'(W) = (1/n) (w grad l(u) -
  w' grad l(u'))``: Frobenius norm at most ``2 sqrt(K) R / n = Delta_obj``, in
  the span of ``u`` and ``u'`` per block (``m`` unchanged); in the ``K``-class
  bound the coefficient ``w loss'(.)`` stays in ``[-1, 0]`` (``w`` in ``[0, 1]``,
  ``loss' <= 0``), the fixed sign that bound uses. The
  pure (Chaudhuri et al.) and AMP (Iyengar et al.) arguments use nothing else,
  nor does the solver-error stage (``2 gamma / lambda'``).
* *Gradient perturbation.* The per-example gradient is clipped to ``clip`` and
  then multiplied by ``w_i <= 1``: its norm stays at most ``clip``, so the
  sum's replace-one sensitivity ``2 clip`` (full batch) and the per-record
  radius ``clip`` (Poisson) are unchanged.

What does not carry over: weights above 1 would scale every sensitivity by
the largest weight (rescale them by a public constant instead; ``C`` then
means a proportionally smaller regularisation); scikit-learn's equivalence
"integer weight = repeated record" does not hold (weights are at most 1 and
``n`` stays the normaliser); ``class_weight="balanced"`` reads the class
counts and is refused; the ``C="auto"`` rule keeps ``n`` as the sample size
(a public rule: it stays private, it only ignores that small weights make the
effective sample smaller). An error on invalid sample weights (outside [0, 1]
or non-finite) is a format error of the data holder's input, raised after the
charge (their values are private; the charge is kept) and naming no value;
all-zero weights are accepted (refusing them would reveal them).

References
----------
.. [1] K. Chaudhuri, C. Monteleoni, A. D. Sarwate. "Differentially private
   empirical risk minimization". JMLR 12, 2011.
.. [2] R. Iyengar, J. P. Near, D. Song, O. Thakkar, A. Thakurta, L. Wang.
   "Towards practical differentially private convex optimization". IEEE S&P 2019.
.. [3] D. Kifer, A. Smith, A. Thakurta. "Private convex empirical risk
   minimization and high-dimensional regression". COLT 2012.
.. [4] M. Abadi et al. "Deep learning with differential privacy". CCS 2016.
.. [5] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi. "Connect
   the dots: tighter discrete approximations of privacy loss distributions".
   PETS 2022.
"""

import math
import warnings
from functools import lru_cache
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy import integrate, optimize
from scipy.special import expit, gammaln, ndtr
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._validation import (
    is_sparse_input,
    check_classes,
    check_label_kind,
    check_data_norm,
    check_epsilon_delta,
    call_without_values,
    encode_labels,
    validate_private_data,
)
from .._dask import is_dask_collection
from .._stats import check_unit_sample_weight, check_weight_structure, computed_row_bound
from ..base import PrivateEstimatorMixin, ValueFreeScoreMixin, private_fit
from .._filter import PURE_RELEASE, release_charge
from ..exceptions import PrivacyGuaranteeWarning, warn_at_caller
from ..mechanisms import Query, calibrate, get_mechanism
from ..mechanisms import _base as _mechanisms_base
from ..mechanisms._grid import (coarsen_for_samplers, discrete_gaussian_tv_reserve, grid_step,
                                refine_for_reserve)
from ..mechanisms.gaussian import analytic_gaussian_mu, composed_gaussian_spec
from ._rows import CLIP_FLOOR, RowOperator, as_operator, row_norms_any, safe_matmul
from ._solver import float_floor, minimize

__all__ = [
    "LogisticLoss",
    "HuberLoss",
    "amp_noise_delta",
    "amp_noise_sigma",
    "amp_epsilon_fraction",
    "amp_multiclass_delta",
    "amp_multiclass_sigma",
    "auto_regularization",
    "default_gradient_steps",
]

_OUT_FRAC = 0.01  # share of (epsilon, delta) for the solver-error noise (Iyengar et al.)


# ----------------------------------------------------------------------
# losses of the margin z = y <w, u>
# ----------------------------------------------------------------------
class LogisticLoss:
    """``log(1 + exp(-z))``: ``|l'| <= 1``, ``0 <= l'' <= 1/4``."""

    name = "logistic"
    curvature = 0.25

    def value_deriv(self, z):
        e = np.exp(-np.abs(z))
        val = np.log1p(e) + np.maximum(-z, 0.0)
        inv = 1.0 / (1.0 + e)
        der = -np.where(z >= 0, e * inv, inv)  # -expit(-z)
        return val, der

    def deriv(self, z):
        """``loss'(z) = -expit(-z)`` alone (the gradient route needs no loss values)."""
        return -expit(-z)

    def second(self, z):
        p = expit(z)
        return p * (1.0 - p)

    def local_curvature(self, z, r):
        """An upper bound on ``loss''`` over ``[z - r, z + r]``: ``loss''(t) = e^-|t| /
        (1 + e^-|t|)^2 <= min(1/4, e^-|t|)`` (the factor 2 covers ``exp``'s rounding)."""
        return np.minimum(0.25, 2.0 * np.exp(-np.maximum(np.abs(z) - r, 0.0)))


class HuberLoss:
    """Huber hinge with smoothing ``h`` (Chaudhuri et al. 2011, eq. 7).

    ``1 - z`` if ``1 - z > h``; ``0`` if ``1 - z < -h``; else
    ``(1 - z)^2 / (4h) + (1 - z)/2 + h/4``. ``|l'| <= 1``, ``0 <= l'' <= 1/(2h)``.
    """

    name = "huber"

    def __init__(self, h):
        self.h = float(h)
        self.curvature = 1.0 / (2.0 * self.h)

    def value_deriv(self, z):
        h = self.h
        m = 1.0 - z
        mid = np.abs(m) <= h
        val = np.where(m > h, m, 0.0)
        der = np.where(m > h, -1.0, 0.0)
        mm = m[mid]
        val[mid] = mm**2 / (4 * h) + mm / 2 + h / 4
        der[mid] = -(mm / (2 * h) + 0.5)
        return val, der

    def deriv(self, z):
        """``loss'(z)`` alone (the gradient route needs no loss values)."""
        m = 1.0 - z
        return np.where(m > self.h, -1.0, np.where(m < -self.h, 0.0, -(m / (2 * self.h) + 0.5)))

    def second(self, z):
        return np.where(np.abs(1.0 - z) <= self.h, self.curvature, 0.0)

    def local_curvature(self, z, r):
        """An upper bound on ``loss''`` over ``[z - r, z + r]``, and 0 only where the computed
        derivative is the exact constant: ``1/(2h)`` unless ``|1 - z| > h + r`` with room
        for the rounding of ``1 - z`` (then every margin within ``r`` is on the same side of
        the band, where ``loss'`` is -1 or 0 and evaluates exactly)."""
        slack = 4.0 * np.finfo(np.float64).eps * (1.0 + np.abs(z) + self.h)
        return np.where(np.abs(1.0 - z) <= self.h + r + slack, self.curvature, 0.0)


# ----------------------------------------------------------------------
# AMP noise calibration (derivation in the module docstring)
# ----------------------------------------------------------------------
def amp_noise_delta(a, epsilon, m):
    """``E[(1 - exp(eps - a rho - a^2/2))_+]`` for ``rho ~ chi_m``.

    The delta of the Gaussian stage of objective perturbation at
    ``a = Delta_obj / sigma_1`` (module docstring, "Objective perturbation").
    """
    a, epsilon = float(a), float(epsilon)
    rho_star = max(0.0, (epsilon - 0.5 * a * a) / a)
    log_norm = (0.5 * m - 1.0) * np.log(2.0) + gammaln(0.5 * m)

    def integrand(r):  # chi_m density written out (faster than scipy.stats in quad)
        if r <= 0.0:
            return 0.0
        log_pdf = (m - 1) * np.log(r) - 0.5 * r * r - log_norm
        return -np.expm1(epsilon - a * r - 0.5 * a * a) * np.exp(log_pdf)

    hi = max(rho_star, np.sqrt(m)) + 60.0
    val, _ = integrate.quad(integrand, rho_star, hi, epsabs=0.0, epsrel=1e-10, limit=200)
    return float(max(val, 0.0))


def amp_noise_sigma(epsilon, delta, sensitivity, m, rtol=1e-10):
    """Smallest ``sigma_1`` (safe side) with ``amp_noise_delta(sensitivity/sigma_1, eps, m) <= delta``.

    Brent's method on ``log delta(a)`` (increasing in ``a = sensitivity / sigma``),
    then ``a`` is nudged down until the condition holds, so the returned sigma
    always satisfies it.
    """
    log_target = np.log(delta)

    def f(a):
        val = amp_noise_delta(a, epsilon, m)
        return (np.log(val) if val > 0 else -np.inf) - log_target

    lo, hi = 0.5, 1.0
    while f(hi) <= 0:
        lo, hi = hi, hi * 2.0
    while f(lo) > 0:
        lo, hi = lo / 2.0, lo
    a = optimize.brentq(f, lo, hi, rtol=rtol) if f(lo) < 0 else lo
    while f(a) > 0:
        a *= 1.0 - rtol
    return float(sensitivity) / a


_MC_STEP = 0.01  # grid of the per-block variable S_k (module docstring, "K classes")


_T_MAX = 9.0  # |z_2| beyond it: mass 2 Q(9) < 3e-19, counted as exceeding every s
_CELL_S_MAX = 6.0  # above it the union bound Q(s/2) + 2 Q(s) is within 1e-3 relative


def _signed_block_survival(grid, n_theta=512):
    """Upper bound, for every ``c``, on ``P((x_1)_+ + (x_2)_+ > s)`` on ``grid`` (step ``h``).

    ``x_1 = (alpha z_1 + beta z_2) / 2``, ``x_2 = (alpha z_1 - beta z_2) / 2``
    with independent standard normals and ``alpha = 2 cos(theta)``, ``beta = 2
    sin(theta)`` are standard normals of correlation ``c = cos(2 theta)``, and
    ``(x_1)_+ + (x_2)_+ = max(0, x_1, x_2, x_1 + x_2) = max(0, alpha z_1,
    (alpha z_1 + beta t) / 2)`` with ``t = |z_2|``. For ``s >= 0``, conditioning
    on ``t`` (half-normal)::

        P(. > s) = E_t[Q(m(t) / alpha)],   m(t) = min(s, 2 s - beta t).

    On a cell ``[theta_i, theta_{i+1}]``: ``Q(m / alpha)`` grows with ``beta``
    (``m`` falls) and, for ``m >= 0``, with ``alpha``, for ``m < 0`` as ``alpha``
    falls; so ``u(t) = Q(m(t) / alpha*)`` with ``beta = beta(theta_{i+1})``,
    ``alpha* = alpha(theta_i)`` where ``m >= 0`` and ``alpha(theta_{i+1})``
    where ``m < 0`` bounds the integrand on the whole cell. ``u`` is
    non-decreasing in ``t``, so on ``t``-cells ``[t_l, t_{l+1}]``,
    ``t_l = l h / beta``, the integral is at most ``sum_l P(t in cell)
    u(t_{l+1})`` (then ``m(t_{l+1})`` is on the grid): for ``s = i h``,

        Q(s / alpha_hi) P(t <= s / beta) + sum_{l >= i} P(t_l < t <= t_{l+1}) U(2 i - l - 1)
        + P(t > T_MAX),   U(k) = Q(k h / alpha*).

    Every ``c`` also has ``P(. > s) <= P(alpha z_1 > s) + P(alpha z_1 + beta t > 2 s)
    <= Q(s/2) + 2 Q(s)`` (``alpha <= 2``; ``P(alpha z_1 + beta |z_2| > x) <= 2
    P(alpha z_1 + beta z_2 > x)``), used above ``_CELL_S_MAX`` and wherever it
    is smaller. The smaller of the two is returned.
    """
    h = float(grid[1] - grid[0])
    surv = ndtr(-grid / 2.0) + 2.0 * ndtr(-grid)
    n_i = int(min(grid.size, np.floor(_CELL_S_MAX / h) + 1))
    i = np.arange(n_i)
    th = np.linspace(0.0, np.pi / 2, n_theta + 1)
    cell = np.zeros(n_i)
    for j in range(n_theta):
        a_hi, a_lo, b_hi = 2.0 * np.cos(th[j]), 2.0 * np.cos(th[j + 1]), 2.0 * np.sin(th[j + 1])
        L = int(np.ceil(_T_MAX * b_hi / h))  # t-cells up to t_L >= T_MAX
        q_t = ndtr(-np.arange(L + 1) * (h / b_hi))  # P(t > t_l) / 2
        w = 2.0 * (q_t[:-1] - q_t[1:])  # P(t_l < t <= t_{l+1}), l = 0 .. L-1
        # U(k) for k = i - 1 - l' (l' = 0 .. L-1, i < n_i): k from -L to n_i - 2
        k = np.arange(-L, n_i)
        with np.errstate(divide="ignore"):
            U = np.where(k >= 0, ndtr(-k * h / a_hi),
                         ndtr(-k * h / a_lo) if a_lo > 0 else 1.0)
        # row i: sum_{l'} w[i + l'] U(i - 1 - l'); w padded with zeros past L - 1
        w_pad = np.concatenate([w, np.zeros(n_i)])
        W = np.lib.stride_tricks.sliding_window_view(w_pad, L)[:n_i]
        Ur = U[::-1]  # Ur[m] = U(n_i - 1 - m): U(i - 1 - l') = Ur[n_i - i + l']
        V = np.lib.stride_tricks.sliding_window_view(Ur, L)[n_i:0:-1]  # row i starts at n_i - i
        part = np.einsum("il,il->i", W, V)
        # P(t <= s / beta) exactly below t_L; 1 above it (the tail term covers t > t_L)
        part += ndtr(-i * h / a_hi) * np.where(i < L, 1.0 - 2.0 * q_t[np.minimum(i, L)], 1.0)
        part += 2.0 * q_t[L]
        np.maximum(cell, part, out=cell)
    surv[:n_i] = np.minimum(surv[:n_i], cell)
    return surv


@lru_cache(maxsize=4)
def _block_pmf(h=_MC_STEP):
    """Upward-rounded pmf of a variable stochastically above every ``S_k`` (any ``c``).

    ``S_k = (x_1)_+ + (x_2)_+`` with ``x_1, x_2`` standard normals of correlation
    ``c`` (module docstring, "K classes"); its survival function is bounded for
    every ``c`` by :func:`_signed_block_survival`, made non-increasing from
    above, and ``1 -`` that bound is the CDF ``G`` of the dominating variable.
    Its mass on ``(s_{j-1}, s_j]`` is put at ``s_j``; the mass beyond the grid
    is returned apart.
    """
    smax = 2.0 * np.sqrt(2.0 * np.log(1e25))
    grid = np.arange(0.0, smax + h, h)
    surv = _signed_block_survival(grid)
    surv[0] = 1.0
    surv = np.maximum.accumulate(surv[::-1])[::-1]  # non-increasing, never below the computed
    return grid, np.concatenate([[0.0], surv[:-1] - surv[1:]]), float(surv[-1])


@lru_cache(maxsize=32)
def _sum_pmf(K):
    """pmf of the sum of ``K`` independent copies of :func:`_block_pmf` (and its lost mass)."""
    from scipy.signal import fftconvolve

    _, pmf, tail = _block_pmf()
    tot = pmf.copy()
    for _ in range(int(K) - 1):
        tot = np.maximum(fftconvolve(tot, pmf), 0.0)
    # FFT rounding: at most ~1e-16 per entry; 1e-12 is added to every delta below
    return tot, 1.0 - (1.0 - tail) ** int(K)


def amp_multiclass_delta(a1, epsilon, K):
    """Upper bound on the AMP noise delta for ``K`` one-vs-rest blocks.

    ``E[(1 - exp(eps - a1 sum_k S_k - 2 K a1^2))_+]`` with ``a1 = R / (n sigma)``
    and ``S_k`` replaced by the dominating grid variable (module docstring,
    "Objective perturbation, K classes").
    """
    tot, lost = _sum_pmf(int(K))
    s = np.arange(tot.size) * _MC_STEP
    x = float(epsilon) - float(a1) * s - 2.0 * K * float(a1) ** 2
    phi = np.where(x < 0.0, -np.expm1(np.minimum(x, 0.0)), 0.0)
    return float(np.sum(tot * phi) + lost + 1e-12)


def amp_multiclass_sigma(epsilon, delta, sensitivity, K, rtol=1e-6):
    """Smallest ``sigma_1`` (safe side) with ``amp_multiclass_delta(a1) <= delta``.

    ``sensitivity`` is ``Delta_obj = 2 sqrt(K) R / n``, so ``a1 = Delta_obj /
    (2 sqrt(K) sigma_1)``. Bisection on ``a1`` (the bound increases with it);
    the lower (safe) end is kept.
    """
    if not delta > 1e-12 * 10:
        raise ValueError("delta too small for the multiclass AMP bound.")
    lo, hi = 0.0, 1.0
    while amp_multiclass_delta(hi, epsilon, K) <= delta:
        lo, hi = hi, 2.0 * hi
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if amp_multiclass_delta(mid, epsilon, K) <= delta:
            lo = mid
        else:
            hi = mid
    if lo <= 0.0:
        raise ValueError("no noise scale meets the multiclass AMP bound.")
    return float(sensitivity) / (2.0 * np.sqrt(K) * lo)


@lru_cache(maxsize=256)
def _cached_amp_sigma(epsilon, delta, sensitivity, m, K):
    """The smaller of the two valid AMP scales (chi_m bound; the K-block bound)."""
    sigma = amp_noise_sigma(epsilon, delta, sensitivity, m)
    if delta > 1e-10:  # the block bound carries a 1e-12 allowance
        sigma = min(sigma, amp_multiclass_sigma(epsilon, delta, sensitivity, K))
    return float(sigma)


def amp_epsilon_fraction(epsilon):
    """Iyengar et al. (2019) hyperparameter-free "strategy 1": share ``eps_3 / eps_1``."""
    epsilon = float(epsilon)
    return max(min(0.88671 + 0.0186607 / epsilon**0.372906, 0.99), 1.0 - 1.0 / epsilon + 0.001)


# ----------------------------------------------------------------------
# the public regularisation rule of C="auto" (derivation in the module docstring)
# ----------------------------------------------------------------------
_AUTO_MARGIN = 5.0  # r R: the comparator's largest margin (a public constant of the rule)
_AUTO_GRADIENT_C = 1.0  # gradient route: scikit-learn's default C (steps and clipping regularise)


def _unit_noise_energy(shape, eps, delta, mechanism):
    """``E ||Z||^2`` of the noise the core calibrates for l2 sensitivity 1 (public)."""
    import warnings

    with warnings.catch_warnings():  # the fit's own calibration warns for unverified names
        warnings.simplefilter("ignore")
        spec = calibrate(Query(shape=shape, l2_sensitivity=1.0), eps, delta, mechanism=mechanism)
    return float(spec.expected_squared_error)


@lru_cache(maxsize=1024)
def auto_regularization(perturbation, curvature, n, K, p, R, eps, delta, mechanism="auto",
                        tol=1e-6):
    """The ``lambda`` of ``C="auto"``: a public function of the settings and the shape.

    Cached: its 80 calibrations (about 0.1 s) depended only on these public
    arguments, yet ran twice in every fit (before the charge and in it) and
    again for every fit of a search or an audit with the same settings.

    Minimises the excess-risk bounds of the module docstring ("Choosing C")
    for a comparator of norm ``r = _AUTO_MARGIN / R``: output perturbation
    ``lambda = (2 c v a^2 R^4 / (n r)^2)^(1/3)`` with ``a = 2 sqrt(K) + 2 tol``;
    objective perturbation ``lambda = sqrt(v_b) |Delta_obj| / r``; gradient
    route ``1 / (n C)`` with scikit-learn's default ``C = 1``. ``v`` is the
    expected squared norm of the noise the core calibrates for unit
    sensitivity at the route's budget.
    """
    r = _AUTO_MARGIN / R
    if perturbation == "gradient":
        return 1.0 / (n * _AUTO_GRADIENT_C)
    if perturbation == "output":
        v = _unit_noise_energy((K, p), eps, delta, mechanism)
        a = 2.0 * np.sqrt(K) + 2.0 * tol
        return float(np.cbrt(2.0 * curvature * v * a**2 * R**4 / (n * r) ** 2))
    # objective: lambda' sets both the bias and eps_J = K log(1 + beta / (n lambda')),
    # hence the noise budget eps_3 = eps_1 - eps_J; minimise the bound over a public grid
    eps1 = (1.0 - _OUT_FRAC) * eps
    pure = _is_pure(mechanism, delta)
    if pure:  # "auto": b is discrete Laplace on a grid (l1 calibration), as the fit draws it
        name, delta1 = ("laplace" if mechanism == "auto" else mechanism), 0.0
    else:
        name, delta1 = "analytic_gaussian", (1.0 - _OUT_FRAC) * delta
    beta = curvature * R**2
    sens = 2.0 * np.sqrt(K) * R / n
    best = None
    for frac in np.linspace(0.02, 0.8, 40):  # eps_J / eps_1
        eps_j = frac * eps1
        with np.errstate(over="ignore"):  # a huge public epsilon: lam = 0 (then the floor)
            lam = beta / (n * np.expm1(eps_j / K))
        v = _unit_noise_energy((K, p), eps1 - eps_j, delta1, name)
        lam = max(lam, np.sqrt(v) * sens / r)  # more regularisation only lowers eps_J
        eps_j = K * np.log1p(beta / (n * lam))
        v = _unit_noise_energy((K, p), eps1 - eps_j, delta1, name)
        bound = lam * r * r / 2.0 + v * sens**2 / (2.0 * lam)
        if best is None or bound < best[0]:
            best = (bound, lam)
    return float(best[1])


# a name registered again may name another mechanism: the cached values are dropped (review 24)
_mechanisms_base._ON_REGISTER.append(auto_regularization.cache_clear)

_SOLVER_MAX_ITER = 1000  # max_iter="auto" for output/objective: iterations of the fast path
_STEPS_MIN, _STEPS_MAX = 20, 1000  # range of the gradient route's public step rule
#: the step rule stops adding steps once the optimisation-error bound ``a / T^2`` is below this
_STEPS_TOL = 1e-3


def default_gradient_steps(n, K, p, curvature, eps, delta, mechanism="auto"):
    """Steps ``T`` of the gradient route for ``max_iter="auto"``: a public rule.

    Balances the accelerated method's optimisation error ``a / T^2`` with
    ``a = 2 c (r R)^2`` against the accumulated noise, ``b sqrt(T)`` with
    ``b = 2 (r R) K sqrt(p) / (n mu)`` under the full-batch GDP calibration
    (``mu`` the Gaussian separation of (epsilon, delta)), or ``b T`` with
    ``b = 2 (r R) K p / (n epsilon)`` under basic composition; ``r R`` is the
    comparator margin of the ``C="auto"`` rule. The minimiser
    ``T = (4 a / b)^(2/5)`` (resp. ``(2 a / b)^(1/3)``) is capped at
    ``sqrt(a / tau)`` (``tau = 1e-3``: the optimisation-error bound no longer
    worth a pass over the data; the cap raises the bound by at most ``tau``),
    rounded up and kept in ``[20, 1000]``. Reads only ``n``, the shape, the loss,
    the budget and the mechanism (module docstring, "Number of steps").
    """
    a = 2.0 * curvature * _AUTO_MARGIN**2
    if mechanism in ("auto", "analytic_gaussian") and delta > 0:
        b = 2.0 * _AUTO_MARGIN * K * np.sqrt(p) / (n * analytic_gaussian_mu(eps, delta))
        T = (4.0 * a / b) ** 0.4
    else:
        b = 2.0 * _AUTO_MARGIN * K * p / (n * eps)
        T = (2.0 * a / b) ** (1.0 / 3.0)
    T = min(T, np.sqrt(a / _STEPS_TOL))
    return int(min(_STEPS_MAX, max(_STEPS_MIN, np.ceil(T))))


# ----------------------------------------------------------------------
# the three routes
# ----------------------------------------------------------------------
def _is_pure(mechanism, delta):
    if mechanism == "auto":
        return delta == 0
    return get_mechanism(mechanism).pure


def _density_noise(spec, rng):
    """The objective's linear term ``b``: continuous noise (the analysis needs its density).

    ``b`` is never released; the minimiser it produces is released through the
    solver-error noise ``spec2.privatize`` on a grid.
    """
    draw = getattr(spec.mechanism_, "sample_continuous", None)
    return draw(spec, rng) if draw is not None else spec.sample(rng)


#: the objective noise's grid: rounding shift at most this share of the solver tolerance gamma
_B_SHIFT_SHARE = 1e-3
#: largest scale (in grid units) of the exact discrete Gaussian sampler
_B_MAX_SCALE = 2.0**40

#: mechanisms AMP passes through uncalibrated for its argument (unverified, as in their papers)
_AMP_PASS_THROUGH = frozenset({"product_noise", "r1smg"})


def _objective_noise_grid(sigma, gamma, k):
    """Power-of-two grid of the AMP noise ``b``: the largest ``g`` with ``g sqrt(k) / 2 <=
    _B_SHIFT_SHARE gamma``, doubled while ``sigma / g > 2^39`` (the sampler's range, with room
    for one more doubling). Public: ``sigma``, ``gamma`` and ``k`` are."""
    target = _B_SHIFT_SHARE * float(gamma) * 2.0 / np.sqrt(k)
    g = math.ldexp(1.0, math.floor(math.log2(target)))
    while g * np.sqrt(k) / 2.0 > _B_SHIFT_SHARE * gamma:
        g /= 2.0
    while sigma / g > _B_MAX_SCALE / 2.0:
        g *= 2.0
    return g


def _draw_objective_noise(sigma, grid, shape, rng):
    """AMP's ``b = grid * Y``, ``Y ~ N_Z(0, (sigma / grid)^2)`` exactly (integer times a power
    of two: an exact product)."""
    from ..mechanisms._discrete import sample_discrete_gaussian

    return sample_discrete_gaussian(sigma / grid, shape, rng) * grid


def _draw_pure_objective_noise(t, grid, shape, rng):
    """The pure route's ``b = grid * Y``, ``Y`` i.i.d. discrete Laplace(``t``) exactly (an
    integer times a power of two: an exact product while ``|Y| < 2^53``)."""
    from ..mechanisms._discrete import sample_discrete_laplace

    return sample_discrete_laplace(t, shape, rng) * grid


def _pure_objective_noise(K, p, sens1, eps3, gamma):
    """``(spec, g)``: the pure route's ``b = g Y``, ``Y`` i.i.d. discrete Laplace(``t``) on the
    public power-of-two grid ``g`` (module docstring, "Floating-point safety of the objective
    route"): ``t = ceil((sqrt(k) Delta / g + k) / eps_3)`` (:func:`~skdp.mechanisms.laplace.
    laplace_grid_t`, ``k = K p``), ``g`` from :func:`_objective_noise_grid` with the scale
    ``sqrt(k) Delta / eps_3``. The spec is the ``laplace`` mechanism's for ``(K, p)`` and
    ``Delta`` with the grid, ``t`` and scale ``t g`` of ``b`` (its squared error that of ``b``)."""
    from dataclasses import replace
    from types import MappingProxyType

    from ..mechanisms.laplace import _discrete_laplace_variance, laplace_grid_t

    k = K * p
    base = calibrate(Query(shape=(K, p), l2_sensitivity=sens1), eps3, 0.0, mechanism="laplace")
    l1 = float(base.params["l1_sensitivity"])
    g = _objective_noise_grid(l1 / eps3, gamma, k)
    t = laplace_grid_t(l1, g, k, eps3)
    params = dict(base.params, grid=g, t=t, scale=t * g)
    mse = k * _discrete_laplace_variance(t) * g * g
    return replace(base, params=MappingProxyType(params), expected_squared_error=mse), g


def _output_spec(K, p, R, n, lam, gamma, eps, delta, mechanism):
    """The output route's release: ``Delta_out = 2 sqrt(K) R' / (n lambda) + 2 gamma / lambda``
    (``R'`` the bound on the computed rows, :func:`skdp._stats.computed_row_bound`)."""
    sens = 2.0 * np.sqrt(K) * computed_row_bound(R, p) / (n * lam) + 2.0 * gamma / lam
    return calibrate(Query(shape=(K, p), l2_sensitivity=sens), eps, delta, mechanism=mechanism), sens


def _output_perturbation(U, Y, loss, lam, R, n, eps, delta, mechanism, gamma, max_iter, rng,
                         sample_weight=None, charged_pure=False):
    K, p = Y.shape[1], U.shape[1]
    W = minimize(U, Y, loss, lam, np.zeros((K, p)), gamma, max_iter, R, sample_weight)
    spec, sens = _output_spec(K, p, R, n, lam, gamma, eps, delta, mechanism)
    if charged_pure and release_charge([spec]) is not PURE_RELEASE:
        # the same public inputs as before the charge give the same spec; checked anyway,
        # since a fit charged (epsilon, 0) may only release pure epsilon-DP noise
        raise RuntimeError("the output route was charged (epsilon, 0) for a pure release, and "
                           "its release recalibrated after the charge is not pure; nothing was "
                           "released. Please report this as a bug.")
    info = {"route": "output", "l2_sensitivity": sens, "regularization": lam}
    return spec.privatize(W, rng), (spec,), info


def _objective_plan(K, p, R, n, lam, gamma, eps, delta, mechanism, curvature, strategy=True):
    """The objective route's calibration from public inputs alone (no data).

    ``R`` the public bound on the augmented rows, ``p`` their length, ``lam``
    the public regularization, ``gamma`` the solver tolerance, ``curvature``
    the loss's. Returns a dict with the noise of ``b`` (``spec1``, the grid
    ``b_grid`` and ``sigma1``), the released draw's ``spec2`` and the split
    of the budget. Raises every error the calibration decides (e.g. a
    ``delta`` too small for the floating-point-safe sampler): it is called
    before the charge when ``data_norm`` and ``classes`` are given
    (:meth:`PrivateLogisticRegression._curve`) and again, identically, in
    the fit.
    """
    R = computed_row_bound(R, p)  # the computed rows' bound (the analysis is for those rows)
    beta = curvature * R**2
    eps2, eps1 = _OUT_FRAC * eps, (1.0 - _OUT_FRAC) * eps
    pure = _is_pure(mechanism, delta)
    if not pure and delta == 0:
        raise ValueError(
            f"mechanism {mechanism!r} is not pure: objective perturbation with it needs "
            "delta > 0 (use delta > 0, or mechanism='auto' or 'laplace' for delta = 0)."
        )
    if pure:
        delta1 = delta2 = 0.0
    else:
        delta2, delta1 = _OUT_FRAC * delta, (1.0 - _OUT_FRAC) * delta
    if strategy:
        eps_j_target = (1.0 - amp_epsilon_fraction(eps1)) * eps1
        lam_tot = max(lam, beta / (n * np.expm1(eps_j_target / K)))
    else:  # C="auto": lam was chosen with its eps_J (auto_regularization), eps_J <= 0.8 eps_1
        lam_tot = lam
    eps_j = K * np.log1p(beta / (n * lam_tot))
    eps3 = eps1 - eps_j
    sens1 = 2.0 * np.sqrt(K) * R / n
    m = int(min(2 * K, K * p))
    b_grid = None
    if pure and mechanism in ("auto", "laplace"):
        # b = g Y with Y exact discrete Laplace on a fine power-of-two grid (module docstring,
        # "Floating-point safety of the objective route"); its rounding shift joins the
        # solver tolerance below; the minimiser is released through Laplace on the grid
        spec1, b_grid = _pure_objective_noise(K, p, sens1, eps3, gamma)
        name2 = "laplace"
        sigma1 = None
    elif pure:
        # an explicitly named pure mechanism (e.g. "gamma_norm", Chaudhuri et al.'s choice):
        # continuous noise drawn in floating point, with the mechanism's own warning
        spec1 = get_mechanism(mechanism).calibrate(Query(shape=(K, p), l2_sensitivity=sens1),
                                                   eps3, 0.0)
        name2 = mechanism
        sigma1 = None
    elif mechanism in ("auto", "analytic_gaussian"):
        # b on a fine power-of-two grid from the exact discrete Gaussian (module docstring,
        # "Floating-point safety of the objective route"): its sampling error is reserved
        # from delta_1 and its rounding shift joins the solver tolerance below
        sigma_full = _cached_amp_sigma(float(eps3), float(delta1), float(sens1), int(m), int(K))
        b_grid = _objective_noise_grid(sigma_full, gamma, K * p)
        # a finer grid where e^eps makes the sampler's reserve large (refine_for_reserve);
        # it only lowers the rounding shift b_shift below
        b_grid *= float(refine_for_reserve(eps, delta1, [sigma_full / (2.0 * b_grid)],
                                           counts=[K * p])[0])
        b_reserve = discrete_gaussian_tv_reserve(eps, delta1, np.full(K * p, sigma_full / (2.0 * b_grid)))
        delta1_eff = delta1 - b_reserve
        if not delta1_eff < delta1:  # below the resolution of delta_1: one ulp is more
            delta1_eff = float(np.nextafter(delta1, 0.0))
        sigma1 = _cached_amp_sigma(float(eps3), float(delta1_eff), float(sens1), int(m), int(K))
        if sigma1 / b_grid > _B_MAX_SCALE:  # (sigma1 is at most a hair above sigma_full)
            b_grid *= 2.0
        eff = sigma1 * analytic_gaussian_mu(eps3, delta1)
        spec1 = calibrate(Query(shape=(K, p), l2_sensitivity=eff), eps3, delta1,
                          mechanism="analytic_gaussian")
        name2 = "analytic_gaussian"
    elif mechanism not in _AMP_PASS_THROUGH:
        raise ValueError(
            f"objective perturbation with delta > 0 supports mechanism='auto', "
            f"'analytic_gaussian' or a pure mechanism; got {mechanism!r} (its calibration "
            "is not derived for the Jacobian/subspace argument of AMP)."
        )
    else:  # the papers' unverified spherical noises are passed through, as the paper does
        spec1 = calibrate(Query(shape=(K, p), l2_sensitivity=sens1), eps3, delta1, mechanism=mechanism)
        name2 = mechanism
        sigma1 = None
    # b = grid * integer is within half a grid step per coordinate of the continuous noise
    # it is coupled to (0 for the continuous draws)
    b_shift = 0.0 if b_grid is None else b_grid * np.sqrt(K * p) / 2.0
    # the released W~ is within (gamma + b_shift) / lambda' of the exact minimiser for the
    # continuous noise coupled to b (b_shift = 0 for the continuous draws)
    sens2 = 2.0 * (gamma + b_shift) / lam_tot
    query2 = Query(shape=(K, p), l2_sensitivity=sens2)
    if name2 == mechanism:  # spec1's calibration already warned if this mechanism warns
        spec2 = get_mechanism(name2).calibrate(query2, eps2, delta2, warn=False)
    else:
        spec2 = calibrate(query2, eps2, delta2, mechanism=name2)
    return dict(R=R, pure=pure, lam_tot=lam_tot, eps_j=eps_j, eps3=eps3, eps2=eps2,
                delta1=delta1, delta2=delta2, sens1=sens1, m=m, spec1=spec1, sigma1=sigma1,
                b_grid=b_grid, b_shift=b_shift, spec2=spec2)


def _objective_perturbation(U, Y, loss, lam, R, n, eps, delta, mechanism, gamma, max_iter, rng,
                            strategy=True, sample_weight=None):
    K, p = Y.shape[1], U.shape[1]
    plan = _objective_plan(K, p, R, n, lam, gamma, eps, delta, mechanism, loss.curvature, strategy)
    R, lam_tot, b_grid, sigma1 = plan["R"], plan["lam_tot"], plan["b_grid"], plan["sigma1"]
    spec1, spec2, b_shift = plan["spec1"], plan["spec2"], plan["b_shift"]
    if sigma1 is not None:  # AMP: exact discrete Gaussian on the grid b_grid
        b = _draw_objective_noise(sigma1, b_grid, (K, p), rng)
    elif b_grid is not None:  # pure: exact discrete Laplace on the grid b_grid
        b = _draw_pure_objective_noise(spec1.params["t"], b_grid, (K, p), rng)
    else:
        b = _density_noise(spec1, rng)
    W = minimize(U, Y, loss, lam_tot, b, gamma, max_iter, R, sample_weight)
    W = spec2.privatize(W, rng)  # independent draw, released on the grid
    info = {
        "route": "objective", "method": "chaudhuri" if plan["pure"] else "amp",
        "regularization": lam_tot, "extra_regularization": lam_tot - lam,
        "eps_jacobian": plan["eps_j"], "eps_noise": plan["eps3"], "eps_solver": plan["eps2"],
        "delta_noise": plan["delta1"], "delta_solver": plan["delta2"],
        "l2_sensitivity": plan["sens1"], "subspace_dim": plan["m"], "sigma": sigma1,
        "noise_grid": b_grid, "noise_grid_shift": b_shift,
    }
    return W, (spec1, spec2), info


def _step_sum_rounding(K, p, n, clip, sparse):
    """``(clip', err)``: the computed per-example gradients and their computed sum.

    Floating point: a clipped per-example gradient, as the fused pass forms it
    (coefficients ``A_ik a_i`` times the row ``x_i``, clip factors from
    computed norms), has norm at most ``clip' = clip (1 + gamma_{p+K+12})``
    (the norms it is clipped by are within ``gamma_{p+K+10}`` of the exact
    ones, :func:`skdp._stats.computed_row_bound`); without clipping
    ``|loss'| <= 1`` and the computed rows give the same bound. The sum over
    at most ``n`` rows is formed by one product per chunk of ``m`` rows and
    the chunk sums added in turn (dense; ``m`` from the pass's public chunk
    rule) or by one sparse product (depth ``n``): every entry is within
    ``gamma_{h+2}`` times the sum of the absolute values of its terms
    (Higham 2002), so ``||fl(S) - S||_F <= err = gamma_{h+2} n clip'``. Both
    are functions of public inputs (``n``, the shape, ``clip``, the format).
    """
    from .._stats import chunked_sum_depth, rounding_gamma
    from ._rows import _FUSED_BYTES

    n = max(int(n), 1)
    clip_c = float(clip) * (1.0 + rounding_gamma(p + K + 12))
    if sparse:
        h = n
    else:  # X has p or p - 1 columns (intercept): chunks of m rows with m between these
        m_hi = min(n, max(1, _FUSED_BYTES // (8 * max(int(p) - 1, 1))))
        m_lo = min(n, max(1, _FUSED_BYTES // (8 * max(int(p), 1))))
        h = chunked_sum_depth(n, m_hi, m_lo)
    return clip_c, rounding_gamma(h + 2) * n * clip_c


def _gradient_spec(K, p, n, eps, delta, mechanism, T, batch_size, clip, sparse=False):
    """The gradient route's noise: ``(spec, accounting, z, q, gaussian, curve)``.

    A function of public inputs only (derivation in the module docstring,
    "Gradient perturbation"). ``curve`` is the fit's
    :class:`skdp._filter.GaussianCurve` for full-batch Gaussian DP-GD: ``T``
    Gaussian steps of rounded sensitivity ``Delta`` and scale ``sigma``
    compose to ``mu = sqrt(T) Delta / sigma`` (Dong, Roth & Su 2022), with
    the steps' sampling error ``reserve / (1 + e^eps)``; ``None`` otherwise
    (Poisson subsampling is accounted by a PLD, not a Gaussian curve; basic
    composition has none).
    """
    from .._accounting import poisson_gaussian_noise_multiplier
    from .._filter import GaussianCurve

    T = int(T)
    if batch_size is None or batch_size >= n:
        q = 1.0
    else:
        q = _coin_rate(batch_size / n)
    gaussian = mechanism in ("auto", "analytic_gaussian") and delta > 0
    # Floating-point safety: every step releases g * (round(sum / g) + Y) with Y
    # discrete Gaussian (skdp.mechanisms._grid). A step's rounded sum moves by at
    # most Delta_step + g sqrt(k) (Poisson: each record's offset from the rounded sum
    # of the others is at most clip + g sqrt(k)), and the T steps' discrete noise is within total
    # variation T * k * tv(sigma / g) of rounded continuous noise: that much
    # (times 1 + e^eps) is reserved from delta before the accounting.
    k = K * p
    # the computed sums of neighbouring data sets differ by at most the exact change of the
    # computed per-example gradients (2 clip', or the radius clip') plus twice the rounding err
    clip_c, err = _step_sum_rounding(K, p, n, clip, sparse)
    if gaussian:
        # replace-one sensitivity of the sum (full batch) / per-record radius of the
        # replace-one mixture pair (Poisson; skdp._accounting)
        step_sens = 2.0 * (clip_c + err) if q == 1.0 else clip_c + 2.0 * err
        g = grid_step(step_sens, np.sqrt(k))
        rounded = step_sens + g * np.sqrt(k)
        if q == 1.0:
            sigma0 = rounded * np.sqrt(T) / analytic_gaussian_mu(eps, delta)
        else:
            # the accountant's bisection returns the upper end of a bracket of relative
            # width 1e-3, so (1 - 1e-3) times it is below the exact multiplier
            sigma0 = rounded * poisson_gaussian_noise_multiplier(eps, delta, q, T) * (1.0 - 1e-3)
        # a finer grid where e^eps makes the sampler's reserve large (refine_for_reserve):
        # the rounded sensitivity and sigma0 only shrink with it
        f = float(refine_for_reserve(eps, delta, [sigma0 / g], releases=T, counts=[k])[0])
        # ... or a coarser one where a tiny epsilon puts sigma0 beyond the sampler's range
        f *= coarsen_for_samplers(1.0, sigma0 / g)
        if f != 1.0:
            g *= f
            sigma0 *= (step_sens + g * np.sqrt(k)) / rounded
            rounded = step_sens + g * np.sqrt(k)
        # sigma0 is (at most) the exact scale at the full delta: the final scale (at
        # delta - reserve) is larger, so the reserve computed here bounds the final one
        reserve = discrete_gaussian_tv_reserve(eps, delta, np.full(k, sigma0 / g), releases=T)
    if gaussian and q == 1.0:
        # T full-batch Gaussian steps compose to one Gaussian with sensitivity sqrt(T) Delta
        sigma = rounded * np.sqrt(T) / analytic_gaussian_mu(eps, delta - reserve)
        spec = composed_gaussian_spec(Query(shape=(K, p), l2_sensitivity=rounded), sigma, g, eps, delta)
        accounting = "gdp_full_batch"
        z = None
    elif gaussian:
        z = poisson_gaussian_noise_multiplier(eps, delta - reserve, q, T)
        if not z * rounded >= sigma0:  # guaranteed by the bracket above; never data-dependent
            raise RuntimeError("accountant bracket inconsistent with the reserved delta.")
        spec = composed_gaussian_spec(Query(shape=(K, p), l2_sensitivity=rounded), z * rounded, g,
                                      eps, delta)
        accounting = "pld_poisson_replace_one"
    else:
        if q < 1.0:
            raise ValueError(
                "Poisson subsampling (batch_size < n) is accounted only for Gaussian noise "
                "(mechanism='auto' or 'analytic_gaussian' with delta > 0)."
            )
        # "auto": Laplace on the grid (floating-point safe; gamma_norm is not)
        name = "laplace" if mechanism == "auto" else mechanism
        spec = calibrate(Query(shape=(K, p), l2_sensitivity=2.0 * (clip_c + err)), eps / T, delta / T,
                         mechanism=name)
        accounting = "basic_composition"
        z = None
    curve = None
    if gaussian and q == 1.0:
        curve = GaussianCurve(float(np.sqrt(T) * rounded / spec.params["sigma"]),
                              float(reserve / (1.0 + np.exp(eps))))
    return spec, accounting, z, q, gaussian, curve


_COIN_BITS = 53


def _coin_rate(q):
    """The Poisson sampling rate the coins realise exactly: ``ceil(q 2^53) / 2^53 >= q``.

    Each record is kept when a uniform integer in ``[0, 2^53)`` is below
    ``ceil(q 2^53)`` (:func:`_poisson_coins`): probability exactly this rate, a
    double, which the accountant then uses (at most ``2^-53`` above
    ``batch_size / n``; a larger rate only weakens the amplification, so
    the guarantee is computed for the coins actually flipped)."""
    return math.ceil(float(q) * 2.0**_COIN_BITS) / 2.0**_COIN_BITS


def _poisson_coins(n, q, rng):
    """Indices of the records kept by ``n`` independent coins of rate ``q = _coin_rate(.)``
    (integer comparisons only: the rate is exact)."""
    k = int(q * 2.0**_COIN_BITS)  # exact: q is a multiple of 2^-53
    return np.flatnonzero(rng.integers(0, 1 << _COIN_BITS, size=n, dtype=np.int64) < k)


def _gradient_perturbation(U, Y, loss, lam, R, n, eps, delta, mechanism, rng, *,
                           n_steps, batch_size, clip, learning_rate, sample_weight=None):
    K, p = Y.shape[1], U.shape[1]
    T = int(n_steps)
    spec, accounting, z, q, gaussian, _ = _gradient_spec(K, p, n, eps, delta, mechanism, T,
                                                         batch_size, clip, as_operator(U).sparse)
    beta_avg = loss.curvature * R**2
    lr = 1.0 / (beta_avg + lam) if learning_rate == "auto" else float(learning_rate)
    denom = q * n
    U = as_operator(U)
    # |loss'| <= 1 and ||u_i|| <= R: per-example gradients have norm <= sqrt(K) R, so a
    # clip at or above it never binds (public decision) and the norms are not needed
    needs_clip = clip < np.sqrt(K) * R
    unorm = U.row_norms() if needs_clip else None  # ||u_i||, computed once
    W = np.zeros((K, p))
    V = W.copy()
    Wavg = np.zeros_like(W)
    # the steps' integer noise is drawn for blocks of steps at once (at most 2^20 values)
    block = max(1, min(T, (1 << 20) // max(K * p, 1))) if gaussian else 0
    pre = None
    for t in range(T):
        if gaussian and t % block == 0:
            pre = spec.mechanism_.draw_grid_noise(spec, min(block, T - t), rng)
        if q < 1.0:
            idx = _poisson_coins(n, q, rng)
            Us, Ys = U.take(idx), Y[idx]
            norm_s = unorm[idx] if needs_clip else None
            ws = None if sample_weight is None else sample_weight[idx]
        else:
            Us, Ys, norm_s, ws = U, Y, unorm, sample_weight
        Yv = V  # Nesterov look-ahead point

        def clipped(Z, Yc, i, j, norm_s=norm_s, ws=ws):
            # per-example gradient A_i u_i^T (norm ||A_i|| ||u_i||), clipped to clip, times w_i
            A = loss.deriv(Z)
            # an iterate that diverged (too large a learning_rate: post-processing of the
            # earlier releases) gives NaN margins where 0 * inf or inf - inf occur, and
            # whether they occur depends on the rows; any coefficient in [-1, 1] keeps the
            # per-example bound, so NaN counts as 0 and the release exists whatever the data
            np.nan_to_num(A, copy=False, nan=0.0)
            A *= Yc
            if needs_clip:
                norms = np.sqrt(np.einsum("ik,ik->i", A, A)) * norm_s[i:j]
                with np.errstate(over="ignore"):  # a zero gradient: clip / 1e-300 = inf, then
                    # 1 (a warning would tell that the data has one; review 14)
                    factor = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
                if ws is not None:  # weights in [0, 1] after clipping: norms stay <= clip
                    factor *= ws[i:j]
                A *= factor[:, None]
            elif ws is not None:
                A *= ws[i:j, None]
            return 0.0, A

        _, S = Us.fused(Yv, Ys, clipped)  # sum of the clipped per-example gradients
        if gaussian:  # integer noise drawn ahead (same mechanism, vectorised)
            G = spec.mechanism_.release_with(spec, S, pre[t % block]) / denom + lam * Yv
        else:
            G = spec.privatize(S, rng) / denom + lam * Yv
        W_new = Yv - lr * G
        V = W_new + (t / (t + 3.0)) * (W_new - W)
        W = W_new
        if t >= T // 2:
            Wavg += W
    W = Wavg / (T - T // 2)
    if not np.isfinite(W).all():  # a function of the released steps only (post-processing)
        warn_at_caller(
            "The gradient route's iterates diverged, so coef_ is not finite: learning_rate="
            f"{lr!r} is too large for this problem (the default 'auto' is 1 / (beta + lambda)).",
            ConvergenceWarning)
    info = {"route": "gradient", "accounting": accounting, "noise_multiplier": z,
            "sampling_rate": q, "n_steps": T, "clip_norm": clip, "learning_rate": lr,
            "regularization": lam}
    return W, (spec,), info


# ----------------------------------------------------------------------
# weights (public range [0, 1]; derivation in the module docstring)
# ----------------------------------------------------------------------
def _check_class_weight(class_weight, classes, estimator):
    """Public checks of ``class_weight`` (a dict {class: weight in [0, 1]}), before the charge."""
    who = type(estimator).__name__
    if class_weight is None:
        return
    if isinstance(class_weight, str):
        raise ValueError(
            f"{who}: class_weight='balanced' is not supported: it reads the class counts of "
            "the private data. Pass a dict {class: weight in [0, 1]} of public weights."
        )
    for key, value in class_weight.items():
        if not (isinstance(value, Real) and not isinstance(value, bool)
                and 0.0 <= float(value) <= 1.0):
            raise ValueError(
                f"{who}: class_weight values must be real numbers in the public range "
                f"[0, 1]; got {value!r} for class {key!r}."
            )
        if classes is not None and key not in classes.tolist():
            raise ValueError(f"{who}: class_weight names class {key!r}, which is not in classes.")


def _record_weights(sample_weight, class_weight, classes_, y_idx, estimator):
    """Per-record weight ``class_weight[y_i] * sample_weight_i`` (``None`` if all are 1)."""
    if not class_weight:
        return sample_weight
    per_class = np.ones(len(classes_))
    listed = classes_.tolist()
    for key, value in class_weight.items():
        if key not in listed:  # inferred classes (classes=None): checked here
            raise ValueError(f"{type(estimator).__name__}: class_weight names class {key!r}, "
                             "which is not among the classes of the fit.")
        per_class[listed.index(key)] = float(value)
    w = per_class[y_idx]
    return w if sample_weight is None else w * sample_weight


# ----------------------------------------------------------------------
# estimator base
# ----------------------------------------------------------------------
class _BasePrivateLinearClassifier(ValueFreeScoreMixin, PrivateEstimatorMixin, ClassifierMixin,
                                   BaseEstimator):
    """Shared fit/predict of the private linear classifiers (see module docstring)."""

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "perturbation": [StrOptions({"output", "objective", "gradient"})],
        "mechanism": [str],
        "classes": [None, "array-like"],
        "C": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "clip_norm": [None, Interval(Real, 0, None, closed="neither")],
        "learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "class_weight": [None, dict, StrOptions({"balanced"})],
    }

    _min_samples = 2

    def _loss(self):
        raise NotImplementedError

    def _solver_iter(self):
        """Iterations of the output/objective solver's fast path (skdp.linear_model._solver)."""
        return _SOLVER_MAX_ITER if self.max_iter == "auto" else int(self.max_iter)

    def _n_steps(self, n, K, p, eps, delta):
        """Steps of the gradient route: ``max_iter``, or the public rule for ``"auto"``."""
        if self.max_iter != "auto":
            return int(self.max_iter)
        return default_gradient_steps(n if n is not None else 1000, K, p, self._loss().curvature,
                                      eps, delta, self.mechanism)

    def _check_public(self, n_samples, n_features):
        """Errors decided by the parameters, ``classes`` and the shape of X alone."""
        super()._check_public(n_samples, n_features)
        classes = check_classes(self.classes, self)
        _check_class_weight(self.class_weight, classes, self)
        eps, delta = check_epsilon_delta(self.epsilon, self.delta)
        named = self.mechanism != "auto"
        mech = get_mechanism(self.mechanism) if named else None  # unknown names -> ValueError
        pure = _is_pure(self.mechanism, delta)
        if delta == 0 and not pure:
            raise ValueError(
                f"mechanism {self.mechanism!r} is not pure: it needs delta > 0 (use delta > 0, "
                "or mechanism='auto' or 'laplace' (pure) for delta = 0)."
            )
        if (self.perturbation == "objective" and delta > 0 and named
                and not mech.pure and self.mechanism != "analytic_gaussian"
                and self.mechanism not in _AMP_PASS_THROUGH):
            raise ValueError(
                f"objective perturbation with delta > 0 supports mechanism='auto', "
                f"'analytic_gaussian' or a pure mechanism; got {self.mechanism!r} (its "
                "calibration is not derived for the Jacobian/subspace argument of AMP)."
            )
        if self.perturbation == "gradient" and self.batch_size is not None and (
                n_samples is None or self.batch_size < n_samples):
            if not (self.mechanism in ("auto", "analytic_gaussian") and delta > 0):
                raise ValueError(
                    "Poisson subsampling (batch_size < n) is accounted only for Gaussian noise "
                    "(mechanism='auto' or 'analytic_gaussian' with delta > 0)."
                )
        if named and classes is not None and n_features is not None:
            K = 1 if classes.size == 2 else classes.size
            shape = (K, n_features + (1 if self.fit_intercept else 0))
            per_step = (eps, delta)
            if self.perturbation == "gradient":  # basic composition per step
                T = self._n_steps(n_samples, K, shape[1], eps, delta)
                per_step = (eps / T, delta / T)
            reason = mech.applicable(Query(shape=shape, l2_sensitivity=1.0), *per_step)
            if reason is not None:
                raise ValueError(f"mechanism {self.mechanism!r} cannot be used here: {reason}.")

    def _warn_lowered_C(self, C_used, n, eps, warned, inferred=False):
        """Warn when the objective route lowers an explicit ``C`` (public: n, epsilon, the
        shape); once per fit, before the charge where the bounds are given. With an inferred
        bound (``inferred``) the limit follows the data's largest row: the message then names
        no value of it (``C_`` holds it, released with the inferred bound)."""
        if (self.perturbation != "objective" or isinstance(self.C, str)
                or not C_used < float(self.C) * (1.0 - 1e-9)):
            return
        warned.append(True)
        used = "the fitted C_" if inferred else f"C_={C_used:.3g}"
        warn_at_caller(
            f"{type(self).__name__}: C={self.C!r} is above what objective perturbation allows at "
            f"n={n} and epsilon={eps:g}: its Jacobian term needs that much regularisation "
            f"(Iyengar et al. 2019), so {used} is used and any larger C gives the same "
            "model. Search C below it, or use C='auto'.", UserWarning)

    def _curve(self, n, d, classes, sparse=False, warned_C=None):
        """The fit's Gaussian curve from public inputs, before the charge (or ``None``).

        The output route releases one calibrated vector (its spec's curve:
        Gaussian, or grid Laplace counted by ``pure_mu``); full-batch Gaussian
        DP-GD composes ``T`` Gaussian steps (:func:`_gradient_spec`). Both
        need only ``n``, the shape, the public ``classes`` and ``data_norm``,
        the budget and the public rules for ``C`` and ``T``. Objective
        perturbation (AMP) and Poisson-sampled DP-SGD have no Gaussian curve:
        the ledger charges them by basic composition. Their calibrations
        (:func:`_objective_plan`, :func:`_gradient_spec`) still run here, so
        that the errors they decide from these public inputs (a ``delta`` too
        small for the floating-point-safe sampler) come before the charge.
        """
        if self.data_norm is None or classes is None or not n or not d:
            return None
        if self.mechanism != "auto":
            mech = get_mechanism(self.mechanism)
            if not (mech.verified and mech.float_safe):
                # no curve for it; its calibration still runs now, so that what the public
                # inputs decide is raised before the charge (review 18, F8), without a second
                # warning about the mechanism
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyGuaranteeWarning)
                    self._route_curve(n, d, classes, sparse, warned_C, curve=False)
                return None
        return self._route_curve(n, d, classes, sparse, warned_C)

    def _route_curve(self, n, d, classes, sparse, warned_C, curve=True):
        """:meth:`_curve` of the route, its bounds given: the calibration from public inputs,
        and its curve (``curve=False``: the calibration only)."""
        eps, delta = check_epsilon_delta(self.epsilon, self.delta)
        K = 1 if classes.size == 2 else classes.size
        _, R = self._intercept_column(float(self.data_norm))
        p = d + int(self.fit_intercept)
        if self.perturbation == "gradient" and self.batch_size is not None and self.batch_size < n:
            # Poisson-sampled DP-SGD: accounted by a PLD, no Gaussian curve; calibrated here
            # (the accountant's multiplier is cached) so that what these public inputs decide
            # (a delta too small for the sampler) comes before the charge (review 14, F1)
            _gradient_spec(K, p, n, eps, delta, self.mechanism, self._n_steps(n, K, p, eps, delta),
                           self.batch_size, self._clip_norm(K, R), sparse)
            return None
        if self.perturbation == "objective":  # public calibration only: no Gaussian curve
            plan = _objective_plan(K, p, R, n, self._regularization(n, K, p, R, eps, delta),
                                   gamma=self._tolerance(n, d, K, R, sparse), eps=eps,
                                   delta=delta, mechanism=self.mechanism,
                                   curvature=self._loss().curvature,
                                   strategy=not isinstance(self.C, str))
            self._warn_lowered_C(1.0 / (n * plan["lam_tot"]), n, eps,
                                 [] if warned_C is None else warned_C)
            return None
        if self.perturbation == "gradient":
            return _gradient_spec(K, p, n, eps, delta, self.mechanism,
                                  self._n_steps(n, K, p, eps, delta), self.batch_size,
                                  self._clip_norm(K, R), sparse)[5]
        lam = self._regularization(n, K, p, R, eps, delta)
        gamma = self._tolerance(n, d, K, R, sparse)
        spec, _ = _output_spec(K, p, R, n, lam, gamma, eps, delta, self.mechanism)
        return release_charge([spec]) if curve else None

    # the route's public constants, shared by the fit and its curve before the charge
    def _intercept_column(self, data_norm):
        """``(s, R)``: the constant column ``s = intercept_scaling * B`` (None without an
        intercept) and the bound ``R = sqrt(B^2 + s^2)`` on the augmented rows."""
        if not self.fit_intercept:
            return None, float(data_norm)
        s = self.intercept_scaling * data_norm
        return s, float(np.hypot(data_norm, s))

    def _regularization(self, n, K, p, R, eps, delta):
        """``lambda``: the public rule of ``C="auto"`` (module docstring, "Choosing C") or
        ``1 / (n C)``."""
        if isinstance(self.C, str):
            return auto_regularization(self.perturbation, self._loss().curvature, n, K, p, R,
                                       eps, delta, self.mechanism, self.tol)
        return 1.0 / (n * self.C)

    def _tolerance(self, n, d, K, R, sparse):
        """The solver's public tolerance ``gamma = tol R / n``, raised to at least 4 times the
        floating-point floor of its certificate (:func:`~skdp.linear_model._solver.float_floor`)
        so that the certificate stays reachable on many rows."""
        return max(self.tol * R / n, 4.0 * float_floor(n, d, K, R, sparse))

    def _clip_norm(self, K, R):
        """The gradient route's per-example clip: ``clip_norm``, or ``sqrt(K) R`` (never binds)."""
        return np.sqrt(K) * R if self.clip_norm is None else float(self.clip_norm)

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows; rows with norm above ``data_norm`` are clipped to it.
        y : array-like of shape (n_samples,)
            Class labels, all in ``classes`` when it is given.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-record weights in the public range [0, 1] (``None``: all 1).
            The loss of record ``i`` is multiplied by ``class_weight[y_i] *
            sample_weight[i]``; weights at most 1 leave every sensitivity
            unchanged (derivation in :mod:`skdp.linear_model._erm`). Weights
            outside [0, 1] or non-finite raise ``ValueError`` naming no value,
            after the budget is charged (their values are private; the charge
            is kept); all-zero weights are accepted.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        if is_dask_collection(X):  # the solvers make many passes: refused before the charge
            raise TypeError(
                f"{type(self).__name__} needs X in memory (or memmapped): its solvers make many "
                "passes over the rows. Fit a dask array with PrivatePCA, PrivateOLS or "
                "PrivateRandomProjection, or call X.compute() / np.asarray on a sample you may hold.")
        n_pub, d_pub = self._public_shape(X, y, requires_y=True)  # structure only, no values
        check_weight_structure(sample_weight, n_pub, self)  # the length only, before the charge
        loss = self._loss()
        classes = check_classes(self.classes, self)
        check_label_kind(y, classes, self)  # the dtypes only
        warned_C = []  # the lowered-C warning, when the curve's calibration gave it
        budget, rng = self._start_fit(n_pub, d_pub, curve=lambda: self._curve(
            n_pub, d_pub, classes, is_sparse_input(X), warned_C))
        sample_weight = check_unit_sample_weight(sample_weight, X, self)  # values: after the charge
        eps, delta = budget.epsilon, budget.delta
        X, y = validate_private_data(self, X, y, accept_sparse=["csr", "csc"],
                                     dtype=[np.float64, np.float32], ensure_min_samples=2)
        if classes is None:  # declared classes: their type was checked before the charge, and
            # encode_labels checks membership (a label's type must not decide whether it fits)
            call_without_values(check_classification_targets, y, name="y", spent=True)
        classes_, y_idx = encode_labels(y, classes, self)
        n_classes = len(classes_)
        n, d = X.shape
        norms = row_norms_any(X)  # float64, once; X itself is never copied
        # check_data_norm reads the row norms of its argument: a column of the norms has them
        data_norm = check_data_norm(norms[:, None], self.data_norm, estimator=self)
        # clip = min(1, B / max(norm, tiny)), in place of the norms (no length-n temporary)
        clip = np.maximum(norms, np.finfo(np.float64).tiny, out=norms)
        with np.errstate(over="ignore"):  # B / tiny: inf for a zero row, then 1 (a warning
            np.divide(data_norm, clip, out=clip)  # would tell that the data has one)
        np.minimum(clip, 1.0, out=clip)
        clip[clip < CLIP_FLOOR] = 0.0  # rows beyond 2^400 data_norm enter as 0 (skdp...._rows)
        del norms
        s, R = self._intercept_column(data_norm)
        U = RowOperator(X, clip, s)  # u_i = [clip_i x_i, s], applied inside the products
        if n_classes == 2:
            Y = np.where(y_idx == 1, 1, -1).astype(np.int8)[:, None]  # +-1: one byte a label
        else:
            Y = np.where(y_idx[:, None] == np.arange(n_classes)[None, :], 1, -1).astype(np.int8)
        K = Y.shape[1]
        weights = _record_weights(sample_weight, self.class_weight, classes_, y_idx, self)
        del y_idx, y  # Y and the weights carry what the solver needs
        lam = self._regularization(n, K, U.shape[1], R, eps, delta)
        gamma = self._tolerance(n, d, K, R, sp.issparse(X))
        if self.perturbation == "output":
            W, specs, info = _output_perturbation(
                U, Y, loss, lam, R, n, eps, delta, self.mechanism, gamma, self._solver_iter(), rng,
                sample_weight=weights, charged_pure=self.privacy_spent_.delta < delta)
        elif self.perturbation == "objective":
            W, specs, info = _objective_perturbation(
                U, Y, loss, lam, R, n, eps, delta, self.mechanism, gamma, self._solver_iter(), rng,
                strategy=not isinstance(self.C, str), sample_weight=weights)
        else:
            W, specs, info = _gradient_perturbation(
                U, Y, loss, lam, R, n, eps, delta, self.mechanism, rng,
                n_steps=self._n_steps(n, K, U.shape[1], eps, delta),
                batch_size=self.batch_size, clip=self._clip_norm(K, R),
                learning_rate=self.learning_rate, sample_weight=weights)
        info["lipschitz"] = R
        info["smoothness"] = loss.curvature * R**2
        info["n_samples"] = n
        self.classes_ = classes_
        # the regularisation used: objective perturbation may raise an explicit C's (its
        # Jacobian term's need at this n and epsilon, "Budget split" above)
        self.C_ = 1.0 / (n * info["regularization"])
        if not warned_C:  # (bounds inferred: decided now, the inferred bound named nowhere)
            self._warn_lowered_C(self.C_, n, eps, [], inferred=True)
        self.data_norm_ = data_norm
        self.noise_spec_ = specs if len(specs) > 1 else specs[0]
        self.privacy_info_ = info
        if self.fit_intercept:
            self.coef_ = W[:, :d].copy()
            self.intercept_ = W[:, d] * s
        else:
            self.coef_ = W.copy()
            self.intercept_ = np.zeros(K)
        return self

    def decision_function(self, X):
        """Signed scores ``X @ coef_.T + intercept_``.

        Returns
        -------
        scores : ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_private_data(self, X, accept_sparse=["csr", "csc"],
                                  dtype=[np.float64, np.float32], reset=False)
        scores = safe_matmul(X, self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predicted class labels."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            idx = (scores > 0).astype(int)
        else:
            idx = scores.argmax(axis=1)
        return self.classes_[idx]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = True
        return tags
