"""Every hook an ember plugin can implement, documented in one place.

A plugin is any module or object with functions marked ``@ember.hookimpl``.
Built-in plugins (the NumPy CPU backend, ...) are registered through the same
:func:`ember.register_plugin` call as third-party ones; third parties are found
through the ``ember`` entry-point group::

    # pyproject.toml of a plugin
    [project.entry-points.ember]
    mybackend = "ember_mybackend.plugin"

Each hook returns a mapping or a list, so ember can tell which plugin offered
what: two plugins claiming the same backend, or the same kernel of an op on a
backend, is an error that names both. To replace another plugin's claim (a
built-in kernel, say), wrap the value in ``ember.Claim(value, priority=1)``:
the claim of the highest priority wins (plain values have 0, as the built-ins'
do), equal priorities stay an error, and ``python -m ember info`` lists what
was overridden. ember calls each plugin's implementation
on its own, through pluggy (:func:`ember.collect_claims`): an implementation
takes, by name, any subset of its hook's arguments, in any order. Hook wrappers
(``wrapper=True`` or ``hookwrapper=True``) are refused at registration, since
there is no call of all plugins together for them to wrap.
"""
import pluggy

hookspec = pluggy.HookspecMarker("ember")


@hookspec
def ember_backends():
    """Return a list of :class:`ember.backends.Backend` objects this plugin provides.

    Each backend owns one device type (``backend.name``, e.g. ``"cpu"`` or
    ``"cuda"``); tensors on ``device(name, i)`` are run by it.

    Example::

        @ember.hookimpl
        def ember_backends():
            return [MyBackend()]
    """


@hookspec
def ember_op_kernels(backend):
    """Return ``{op_name: kernel}``: kernels that replace an op's default forward on ``backend``.

    Ops are written once against the array API (``backend.xp``); a backend
    overrides an op only where it has a better kernel. A kernel has the op's
    forward signature ``kernel(ctx, xp, *arrays, **attrs)`` and returns the
    same arrays the default would; the op's backward is unchanged. ``op_name``
    is the ``name_`` the op's class declares (``ember.autograd.function.OPS``
    maps every name to its op).

    Example::

        @ember.hookimpl
        def ember_op_kernels(backend):
            if backend.name == "cpu":
                return {"exp": lambda ctx, xp, a: numexpr_exp(a)}
            return {}
    """


@hookspec
def ember_onnx_lowerings():
    """Return ``{op_name: lowering}``: how to write an op as ONNX nodes.

    A lowering is ``lowering(graph, node) -> list of output names``; it is used by
    ``ember.onnx.export`` (distribution ember-onnx) for the ops a traced model ran,
    found by the op's ``name_``. Two plugins lowering the same op is an error
    naming both.
    """


@hookspec
def ember_cpu_kernels():
    """Return ``{name: kernel}``: compiled versions of the CPU backend's inner loops that are not whole ops.

    Ops are replaced with :func:`ember_op_kernels`; these are the loops inside ember's own CPU code that NumPy
    runs in several passes: the random generator's transforms, the float16 conversions and the fused optimizer
    updates. A kernel must give
    bit for bit what ember's NumPy code gives; ember calls it only on large enough arrays (below, NumPy is quick,
    and a program does not pay a compiler's start). Names and signatures:

    - the CPU generator (:mod:`ember.ops._cpu_distributions`). Each takes the MT19937 state (``key``: its 624
      words as a ``uint32`` array, changed in place; ``pos``: how many are used, 0 to 624), fills ``out`` and
      returns the new ``pos``, consuming words in PyTorch's order:

      - ``"random_uniform"``: ``kernel(key, pos, out, low, high)``, ``out`` float32 or float64;
      - ``"random_normal"``: ``kernel(key, pos, out, mean, std)``, ``out`` float32 or float64 of 16 or more
        values (the blocked Box-Muller);
      - ``"random_integers"``: ``kernel(key, pos, out, low, span)``, ``out`` int64, ``low + word % span``
        (64-bit draws when ``span >= 2**32``; ``span < 2**63``);
      - ``"random_bernoulli"``: ``kernel(key, pos, out, threshold)``, ``out`` bool, True where a 64-bit draw's
        53 low bits are below ``threshold``;
      - ``"random_permutation"``: ``kernel(key, pos, out)``, ``out`` int64: the forward Fisher-Yates shuffle of
        ``0 .. len(out)-1``;
    - the float16 conversions (:mod:`ember.backends.reduced_casts`), on bit patterns:

      - ``"float16_to_float32"``: ``kernel(half, out)``, ``half`` 2-D uint16 of any strides, ``out`` uint32 of
        its shape, C-contiguous: exact, NaN payloads kept;
      - ``"float32_to_float16"``: ``kernel(bits, out)``, ``bits`` 1-D contiguous uint32, ``out`` uint16 of its
        size: round to nearest even, a NaN becomes the quiet NaN of its sign.
    - the fused optimizer updates (``ember.optim``'s ``fused=True``/``foreach=True``), over 1-D contiguous arrays
      of one float dtype, changed in place, every scalar given in that dtype; the same operations in the same
      order as the optimizer's NumPy update:

      - ``"sgd_update"``: ``kernel(p, g, b, momentum, keep, lr, nesterov, has_buffer)``: with ``has_buffer``,
        ``b = b * momentum + g * keep`` and the step is ``b`` (``b * momentum + g`` if ``nesterov``), else ``g``;
        then ``p = p - step * lr``;
      - ``"adam_update"``: ``kernel(p, g, m, v, v_max, amsgrad, keep_g, one_minus_beta2, beta2, neg_step_size,
        bias2_sqrt, eps)``: ``m = m + (g - m) * keep_g``, ``v = v * beta2 + g * g * one_minus_beta2``, with
        ``amsgrad`` ``v_max = maximum(v_max, v)`` standing for ``v`` below, then
        ``p = p + m * neg_step_size / (sqrt(v) / bias2_sqrt + eps)``.
    - the matrix product (:mod:`ember.backends.numpy_namespace`'s ``matmul``, which every CPU op's product goes
      through), the one kernel not bit for bit NumPy's (a BLAS's rounding is its own, as OpenBLAS's is):

      - ``"gemm_float32"``: ``kernel(a, b, out)``: ``out = a @ b``; ``a`` (M, K) and ``b`` (K, N) float32 with
        unit stride along one dimension and a leading dimension no smaller than the other's extent, ``out``
        (M, N) float32, C-contiguous, overlapping neither; M, N, K >= 1 and ``M * N * K`` at least
        :data:`~ember._plugins.CPU_KERNEL_MIN`.

    Two plugins giving the same kernel is an error naming both. Example::

        @ember.hookimpl
        def ember_cpu_kernels():
            return {"random_uniform": my_compiled_uniform}
    """


@hookspec
def ember_compilers():
    """Return ``{name: compiler}``: the backends of :func:`ember.compile`.

    ``compiler(model, example_inputs, options)`` gets the model (an ``ember.nn.Module`` or a function of
    tensors), a tuple of example input tensors and the caller's ``options`` dict (None when none were given),
    and returns a callable taking the model's inputs. ember-onnx gives ``"onnxruntime"``. Example::

        @ember.hookimpl
        def ember_compilers():
            return {"identity": lambda model, example_inputs, options: model}
    """


@hookspec
def ember_status():
    """Return ``{topic: describe}``: ``describe()`` gives one line on the state of something this plugin gives
    that depends on the machine rather than on a backend (in use, or not and why).

    ``python -m ember info`` prints each under "plugin status", with the plugin's name; it is called only there,
    so it may do what a registration should not (load a large library). ember-onednn says whether oneDNN's
    convolutions are in use. Two plugins giving the same topic is an error naming both. Example::

        @ember.hookimpl
        def ember_status():
            return {"my kernels": lambda: "in use: libfoo 1.2" if found else "not in use: libfoo is missing"}
    """
