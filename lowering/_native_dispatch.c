/* numax's native call path for jitted functions: a cache hit in C.
 *
 * `CachedCall` is the base type of `numax.jit`'s PjitFunction. Calling an instance runs `call_cached`
 * below: it flattens positional arguments made of numax Arrays, Python scalars, tuples, lists and dicts
 * into the same cache key the Python path builds (transforms/jit.py: `flatten_with_signature`), looks
 * the key up in the function's cache, runs the executable through jaxlib's `execute_sharded` and wraps
 * the outputs into numax Arrays. Everything else -- keyword arguments, static arguments, tracers, other
 * leaf types, cache misses, donation, NaN checks, several devices, a trace in progress -- goes to the
 * Python path, `self._call(*args, **kwargs)` (so do programs with host callbacks, whose runtime tokens the
 * Python path keeps for effects_barrier), which stays the reference: the native path only ever
 * answers a call the Python path would answer the same way, and takes no decision of its own. A hit on a
 * program over several devices (sharded jit, and pmap, whose callable is a `CachedCall` too) is answered when
 * every argument is a ShardedArray whose blocks are already laid out as the program takes them (its
 * `MultiDeviceCall.native_in`); its outputs come back as ShardedArrays.
 *
 * `ArrayBase`, the base type of numax.Array, answers `block_until_ready` and `__array__` of a plain Array in
 * C when the answer needs no decision (a live buffer that is ready; a CPU buffer of a numpy dtype, read
 * through the buffer protocol), and calls the Array's Python methods otherwise. `eager_unary` answers an
 * eager one-argument primitive whose executable the eager fast path compiled before.
 *
 * Errors inside the native path are not reported from here. Before the program runs, the call is handed
 * to the Python path, which raises its own error (a deleted argument, say). An executable that fails to
 * run is run again through `Executable.run_on`, which names the problem.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* --- what `configure` hands over once, at import ------------------------------------------------- */
static PyTypeObject *array_type;      /* lowering.array.Array */
static PyTypeObject *executable_type; /* lowering.dispatch.Executable */
static PyTypeObject *entry_type;      /* transforms.jit.CacheEntry */
static PyObject *config;              /* core.config.config */
static PyObject *trace_state;         /* core.trace.trace_state (thread-local) */
static PyObject *global_statistics;   /* transforms.recompiles.global_statistics */
static PyTypeObject *sharded_type;    /* lowering.sharded_array.ShardedArray (NULL until configure_sharded) */
static PyTypeObject *multi_call_type; /* lowering.sharded.MultiDeviceCall */
static PyTypeObject *statistics_type; /* its type, JitStatistics */
static PyTypeObject *plain_config_type; /* type(config) while no thread holds an override (then: its __dict__) */
static PyObject *config_dict;         /* config.__dict__, where the global flag values are */

/* Offsets of __slots__ members, read from their member descriptors at `configure`. */
static Py_ssize_t array_aval, array_buffer, array_backend, array_device, array_host_value, array_ready,
    array_committed;
static Py_ssize_t ex_compiled, ex_backend, ex_device, ex_const_buffers, ex_handlers, ex_out_avals, ex_host_callbacks;
static Py_ssize_t entry_executable, entry_out_tree, entry_donated, entry_out_kind, entry_out_plan;
static Py_ssize_t statistics_cache_hits;
static Py_ssize_t sharded_parts, sharded_whole, sharded_whole_layout, sharded_sharding, sharded_indices;
static Py_ssize_t multi_compiled, multi_handlers, multi_devices, multi_backend, multi_out_avals, multi_out_shardings,
    multi_out_layouts, multi_native_in, multi_leading;

static PyObject *s_disable_jit, *s_native_dispatch, *s_check_numerics, *s_enable_x64, *s_default_device,
    *s_numpy_dtype_promotion, *s_numpy_rank_promotion;
static PyObject *empty_tuple, *one; /* the cache key's "no static arguments", and a hit's increment */
static PyObject *s_stack, *s_cache_hits, *s_call, *s_execute_sharded, *s_consume_with_handlers, *s_run_on,
    *s_unflatten, *s_is_deleted, *s_is_ready, *s_block_until_ready, *s_python_block_until_ready, *s_python_array,
    *s_platform, *s_cpu, *s_dtype, *s_polls_waits, *s_native_call;

/* What `configure_arrays` hands over: numpy.asarray and the dtypes a CPU buffer is read back as through the buffer
 * protocol; and `configure_eager`: the eager executables' table and the Python function that fills it. */
static PyObject *numpy_asarray, *buffer_dtypes, *eager_table, *eager_unary_miss;

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

/* The offset of __slots__ member `name` of `type`, or -1 with an error set. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *descriptor = PyDict_GetItemString(type->tp_dict, name);
    if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ member", type->tp_name, name);
        return -1;
    }
    return ((PyMemberDescrObject *)descriptor)->d_member->offset;
}

/* The output trees the native path builds itself (CacheEntry.out_kind); others call out_tree.unflatten. */
enum { OUT_LEAF = 0, OUT_TUPLE = 1, OUT_OTHER = 2, OUT_PLANNED = 3 };

/* --- the cache key ------------------------------------------------------------------------------ */
static int is_python_scalar(PyObject *value) {
    PyTypeObject *type = Py_TYPE(value);
    return type == &PyFloat_Type || type == &PyLong_Type || type == &PyBool_Type || type == &PyComplex_Type;
}

/* The signature of `tree` as `flatten_with_signature` makes it, appending its leaves to `leaves`.
 * NULL without an error: a tree the native path leaves to Python. NULL with an error: out of memory. */
static PyObject *signature_of(PyObject *tree, PyObject *leaves);

static PyObject *leaf_or_node_signature(PyObject *child, PyObject *leaves) {
    if (Py_IS_TYPE(child, array_type)) {
        PyObject *aval = SLOT(child, array_aval), *device = SLOT(child, array_device);
        if (aval == NULL || PyList_Append(leaves, child) < 0)
            return NULL;
        /* A committed array runs where it lies: (aval, device), equal to jit.py's OnDevice key. */
        if (SLOT(child, array_committed) == Py_True)
            return device == NULL ? NULL : PyTuple_Pack(2, aval, device);
        return Py_NewRef(aval);
    }
    if (is_python_scalar(child)) {
        if (PyList_Append(leaves, child) < 0)
            return NULL;
        return Py_NewRef((PyObject *)Py_TYPE(child));
    }
    if (sharded_type != NULL && Py_IS_TYPE(child, sharded_type)) {
        PyObject *aval = SLOT(child, array_aval), *sharding = SLOT(child, sharded_sharding);
        if (aval == NULL || sharding == NULL || PyList_Append(leaves, child) < 0)
            return NULL;
        /* (aval, sharding): equal to jit.py's LaidOut key */
        return PyTuple_Pack(2, aval, sharding);
    }
    return signature_of(child, leaves);
}

static PyObject *signature_of(PyObject *tree, PyObject *leaves) {
    PyTypeObject *type = Py_TYPE(tree);
    if (type == &PyTuple_Type || type == &PyList_Type) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(tree);
        PyObject **items = PySequence_Fast_ITEMS(tree);
        PyObject *key = PyTuple_New(n + 1);
        if (key == NULL)
            return NULL;
        PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)type));
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *child = leaf_or_node_signature(items[i], leaves);
            if (child == NULL) {
                Py_DECREF(key);
                return NULL;
            }
            PyTuple_SET_ITEM(key, i + 1, child);
        }
        return key;
    }
    if (type == &PyDict_Type) {
        PyObject *names = PyDict_Keys(tree);
        if (names == NULL)
            return NULL;
        if (PyList_Sort(names) < 0) { /* keys that do not sort: Python's error */
            Py_DECREF(names);
            PyErr_Clear();
            return NULL;
        }
        Py_ssize_t n = PyList_GET_SIZE(names);
        PyObject *key = PyTuple_New(n + 2);
        PyObject *name_tuple = key == NULL ? NULL : PyList_AsTuple(names);
        if (name_tuple == NULL) {
            Py_XDECREF(key);
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)&PyDict_Type));
        PyTuple_SET_ITEM(key, 1, name_tuple);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *child = PyDict_GetItemWithError(tree, PyList_GET_ITEM(names, i));
            child = child == NULL ? NULL : leaf_or_node_signature(child, leaves);
            if (child == NULL) {
                Py_DECREF(key);
                Py_DECREF(names);
                return NULL;
            }
            PyTuple_SET_ITEM(key, i + 2, child);
        }
        Py_DECREF(names);
        return key;
    }
    return NULL;
}

/* --- running a cached executable ---------------------------------------------------------------- */
/* The device buffers of `leaves` (constant buffers first) when every leaf is an Array on the executable's
 * device; NULL without an error otherwise. */
static PyObject *buffers_of(PyObject *executable, PyObject *leaves) {
    PyObject *device = SLOT(executable, ex_device), *backend = SLOT(executable, ex_backend);
    PyObject *consts = SLOT(executable, ex_const_buffers);
    Py_ssize_t n_consts = consts == NULL ? 0 : PyList_GET_SIZE(consts), n = PyList_GET_SIZE(leaves);
    PyObject *buffers = PyList_New(n_consts + n);
    if (buffers == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n_consts; i++)
        PyList_SET_ITEM(buffers, i, Py_NewRef(PyList_GET_ITEM(consts, i)));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        PyObject *buffer = Py_IS_TYPE(leaf, array_type) ? SLOT(leaf, array_buffer) : NULL;
        if (buffer == NULL || SLOT(leaf, array_device) != device || SLOT(leaf, array_backend) != backend) {
            Py_DECREF(buffers);
            return NULL;
        }
        PyList_SET_ITEM(buffers, n_consts + i, Py_NewRef(buffer));
    }
    return buffers;
}

/* The raw output buffers of running `executable` on `leaves`; NULL with an error when it cannot run. */
static PyObject *run(PyObject *executable, PyObject *leaves) {
    PyObject *buffers = buffers_of(executable, leaves);
    if (buffers != NULL) {
        PyObject *results = PyObject_CallMethodOneArg(SLOT(executable, ex_compiled), s_execute_sharded, buffers);
        Py_DECREF(buffers);
        if (results != NULL) {
            PyObject *outputs = PyObject_CallMethodOneArg(results, s_consume_with_handlers,
                                                          SLOT(executable, ex_handlers));
            Py_DECREF(results);
            if (outputs != NULL)
                return outputs;
        }
        if (PyErr_ExceptionMatches(PyExc_MemoryError))
            return NULL;
        PyErr_Clear();
    } else if (PyErr_Occurred()) {
        return NULL;
    }
    /* Scalars, arrays elsewhere, or a failed run (a deleted argument?): the Python method says which. */
    return PyObject_CallMethodOneArg(executable, s_run_on, leaves);
}

/* A new instance of `type` (Array or ShardedArray) with the slots both __init__s set: no host value yet. */
static PyObject *alloc_array(PyTypeObject *type, PyObject *aval, PyObject *buffer, PyObject *backend,
                             PyObject *device, int committed) {
    PyObject *array = type->tp_alloc(type, 0);
    if (array == NULL)
        return NULL;
    SLOT(array, array_aval) = Py_NewRef(aval);
    SLOT(array, array_buffer) = Py_NewRef(buffer);
    SLOT(array, array_backend) = Py_NewRef(backend);
    SLOT(array, array_device) = Py_NewRef(device);
    SLOT(array, array_host_value) = Py_NewRef(Py_None);
    SLOT(array, array_committed) = Py_NewRef(committed ? Py_True : Py_False);
    return array;
}

/* A new Array; `committed` when some input of the computation that made it was (jax's rule). */
static PyObject *new_array(PyObject *aval, PyObject *buffer, PyObject *backend, PyObject *device, int committed) {
    PyObject *array = alloc_array(array_type, aval, buffer, backend, device, committed);
    if (array != NULL)
        SLOT(array, array_ready) = Py_NewRef(Py_False);
    return array;
}

/* The output tree `plan` describes (CacheEntry.out_plan: None a leaf, (tuple | list, child plans), (dict, child
 * plans, keys), (NoneType,)), its leaves taken from the list `arrays` from position *next on. */
static PyObject *build_planned(PyObject *plan, PyObject *arrays, Py_ssize_t *next) {
    if (plan == Py_None) {
        if (*next >= PyList_GET_SIZE(arrays)) {
            PyErr_SetString(PyExc_RuntimeError, "numax: an output plan with more leaves than outputs");
            return NULL;
        }
        return Py_NewRef(PyList_GET_ITEM(arrays, (*next)++));
    }
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) < 1) {
        PyErr_SetString(PyExc_RuntimeError, "numax: a malformed output plan");
        return NULL;
    }
    PyObject *type = PyTuple_GET_ITEM(plan, 0);
    if (type == (PyObject *)Py_TYPE(Py_None))
        return Py_NewRef(Py_None);
    PyObject *children = PyTuple_GET_SIZE(plan) >= 2 ? PyTuple_GET_ITEM(plan, 1) : NULL;
    PyObject *keys = PyTuple_GET_SIZE(plan) == 3 ? PyTuple_GET_ITEM(plan, 2) : NULL;
    int is_dict = type == (PyObject *)&PyDict_Type;
    if (children == NULL || !PyTuple_Check(children) ||
        (is_dict ? keys == NULL || !PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != PyTuple_GET_SIZE(children)
                 : type != (PyObject *)&PyTuple_Type && type != (PyObject *)&PyList_Type)) {
        PyErr_SetString(PyExc_RuntimeError, "numax: a malformed output plan");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(children);
    PyObject *node = is_dict ? PyDict_New() : type == (PyObject *)&PyTuple_Type ? PyTuple_New(n) : PyList_New(n);
    if (node == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *child = build_planned(PyTuple_GET_ITEM(children, i), arrays, next);
        if (child == NULL) {
            Py_DECREF(node);
            return NULL;
        }
        if (is_dict) { /* (keys in the tree's order, as dict(zip(keys, children)) inserts them) */
            int failed = PyDict_SetItem(node, PyTuple_GET_ITEM(keys, i), child);
            Py_DECREF(child);
            if (failed < 0) {
                Py_DECREF(node);
                return NULL;
            }
        } else if (PyTuple_Check(node)) {
            PyTuple_SET_ITEM(node, i, child);
        } else {
            PyList_SET_ITEM(node, i, child);
        }
    }
    return node;
}

/* A new ShardedArray holding `whole` (one raw array over the devices, laid out as `layout` says), as
 * ShardedArray.__init__ makes a program's output. */
static PyObject *new_sharded_array(PyObject *aval, PyObject *whole, PyObject *backend, PyObject *sharding,
                                   PyObject *layout) {
    PyObject *array = alloc_array(sharded_type, aval, Py_None, backend, Py_None, 1);
    if (array == NULL)
        return NULL;
    SLOT(array, sharded_parts) = Py_NewRef(Py_None);
    SLOT(array, sharded_whole) = Py_NewRef(whole);
    SLOT(array, sharded_whole_layout) = Py_NewRef(layout);
    SLOT(array, sharded_sharding) = Py_NewRef(sharding);
    SLOT(array, sharded_indices) = Py_NewRef(Py_None);
    return array;
}

/* The outputs of `executable` (an Executable) or `call` (a MultiDeviceCall: the other is NULL), each wrapped into
 * an Array or a ShardedArray and arranged as the entry's output tree. */
static PyObject *wrap_outputs(PyObject *entry, PyObject *executable, PyObject *call, PyObject *outputs,
                              int committed) {
    PyObject *out_avals = executable ? SLOT(executable, ex_out_avals) : SLOT(call, multi_out_avals);
    PyObject *backend = executable ? SLOT(executable, ex_backend) : SLOT(call, multi_backend);
    PyObject *device = executable ? SLOT(executable, ex_device) : NULL;
    PyObject *shardings = call ? SLOT(call, multi_out_shardings) : NULL, *layouts = call ? SLOT(call, multi_out_layouts)
                                                                                           : NULL;
    Py_ssize_t n = PyList_GET_SIZE(outputs);
    if (!PyList_Check(out_avals) || PyList_GET_SIZE(out_avals) != n ||
        (call && (!PyList_Check(shardings) || PyList_GET_SIZE(shardings) != n || !PyList_Check(layouts) ||
                  PyList_GET_SIZE(layouts) != n))) {
        PyErr_SetString(PyExc_RuntimeError, "numax: an executable returned an unexpected number of outputs");
        return NULL;
    }
    long kind = PyLong_AsLong(SLOT(entry, entry_out_kind));
    PyObject *arrays = kind == OUT_TUPLE ? PyTuple_New(n) : PyList_New(n);
    if (arrays == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *aval = PyList_GET_ITEM(out_avals, i), *output = PyList_GET_ITEM(outputs, i);
        PyObject *array = call ? new_sharded_array(aval, output, backend, PyList_GET_ITEM(shardings, i),
                                                   PyList_GET_ITEM(layouts, i))
                               : new_array(aval, output, backend, device, committed);
        if (array == NULL) {
            Py_DECREF(arrays);
            return NULL;
        }
        if (kind == OUT_TUPLE)
            PyTuple_SET_ITEM(arrays, i, array);
        else
            PyList_SET_ITEM(arrays, i, array);
    }
    if (kind == OUT_TUPLE)
        return arrays;
    PyObject *result;
    if (kind == OUT_LEAF && n == 1) {
        result = Py_NewRef(PyList_GET_ITEM(arrays, 0));
    } else if (kind == OUT_PLANNED) {
        Py_ssize_t next = 0;
        result = build_planned(SLOT(entry, entry_out_plan), arrays, &next);
        if (result != NULL && next != n) {
            Py_CLEAR(result);
            PyErr_SetString(PyExc_RuntimeError, "numax: an output plan with fewer leaves than outputs");
        }
    } else {
        result = PyObject_CallMethodOneArg(SLOT(entry, entry_out_tree), s_unflatten, arrays);
    }
    Py_DECREF(arrays);
    return result;
}

/* Whether some leaf is an Array committed to its device. */
static int any_committed(PyObject *leaves) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(leaves); i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i);
        if (Py_IS_TYPE(leaf, array_type) && SLOT(leaf, array_committed) == Py_True)
            return 1;
    }
    return 0;
}

static int count_hit(PyObject *statistics) {
    if (!Py_IS_TYPE(statistics, statistics_type))
        return -1;
    PyObject *hits = SLOT(statistics, statistics_cache_hits);
    PyObject *more = hits == NULL ? NULL : PyNumber_Add(hits, one);
    if (more == NULL)
        return -1;
    SLOT(statistics, statistics_cache_hits) = more;
    Py_DECREF(hits);
    return 0;
}

/* The one output of a one-device executable without constants run on `buffers`, as an Array; NULL with the
 * runtime's error when it fails. */
static PyObject *run_single_output(PyObject *executable, PyObject *buffers, int committed) {
    PyObject *out_avals = SLOT(executable, ex_out_avals);
    PyObject *results = PyObject_CallMethodOneArg(SLOT(executable, ex_compiled), s_execute_sharded, buffers);
    if (results == NULL)
        return NULL;
    PyObject *outputs = PyObject_CallMethodOneArg(results, s_consume_with_handlers, SLOT(executable, ex_handlers));
    Py_DECREF(results);
    if (outputs == NULL)
        return NULL;
    PyObject *array = NULL;
    if (PyList_Check(outputs) && PyList_GET_SIZE(outputs) == 1 && PyList_Check(out_avals) &&
        PyList_GET_SIZE(out_avals) == 1)
        array = new_array(PyList_GET_ITEM(out_avals, 0), PyList_GET_ITEM(outputs, 0), SLOT(executable, ex_backend),
                          SLOT(executable, ex_device), committed);
    else
        PyErr_SetString(PyExc_TypeError, "run_single: the executable does not have exactly one output");
    Py_DECREF(outputs);
    return array;
}

/* run_single(executable, buffers): the one output of a one-device executable without constants (eager dispatch's
 * fast paths), as an Array; the runtime's error, if it fails, for the caller to hand to the general path. */
static PyObject *run_single(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || array_type == NULL || !Py_IS_TYPE(args[0], executable_type)) {
        PyErr_SetString(PyExc_TypeError, "run_single(executable, buffers) before configure, or not an Executable");
        return NULL;
    }
    return run_single_output(args[0], args[1], 0); /* (the caller commits it where an input was) */
}

/* --- programs over several devices -------------------------------------------------------------- */
/* Is a raw array deleted? -1 with an error when it cannot be asked. */
static int is_deleted(PyObject *buffer) {
    PyObject *answer = PyObject_CallMethodNoArgs(buffer, s_is_deleted);
    int deleted = answer == NULL ? -1 : PyObject_IsTrue(answer);
    Py_XDECREF(answer);
    return deleted;
}

/* Whether a ShardedArray's blocks are all alive (ShardedArray.is_deleted's answer negated); 0 also on an error. */
static int blocks_alive(PyObject *array, PyObject *whole) {
    if (is_deleted(whole) != 0)
        return 0;
    PyObject *parts = SLOT(array, sharded_parts);
    if (parts == NULL || parts == Py_None)
        return 1;
    if (!PyList_Check(parts))
        return 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parts); i++)
        if (is_deleted(PyList_GET_ITEM(parts, i)) != 0)
            return 0;
    return 1;
}

/* The raw arguments of a MultiDeviceCall (its leading ones first) when every leaf is a ShardedArray whose whole
 * array is laid out as the program takes it (`native_in`'s HLO sharding, over the call's devices) and none of
 * whose blocks is deleted; NULL without an error otherwise (MultiDeviceCall.argument decides). A whole array's
 * layout always describes the array's own blocks, so such an argument is what the Python path passes too. */
static PyObject *multi_arguments(PyObject *call, PyObject *leaves) {
    PyObject *native_in = SLOT(call, multi_native_in), *leading = SLOT(call, multi_leading);
    PyObject *devices = SLOT(call, multi_devices);
    if (native_in == NULL || leading == NULL || !PyList_Check(native_in) || !PyList_Check(leading))
        return NULL;
    Py_ssize_t n_leading = PyList_GET_SIZE(leading), n = PyList_GET_SIZE(leaves);
    if (PyList_GET_SIZE(native_in) != n_leading + n)
        return NULL;
    PyObject *arguments = PyList_New(n_leading + n);
    if (arguments == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n_leading; i++)
        PyList_SET_ITEM(arguments, i, Py_NewRef(PyList_GET_ITEM(leading, i)));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *leaf = PyList_GET_ITEM(leaves, i), *taken = PyList_GET_ITEM(native_in, n_leading + i);
        if (!Py_IS_TYPE(leaf, sharded_type) || taken == Py_None)
            goto refuse;
        PyObject *layout = SLOT(leaf, sharded_whole_layout), *whole = SLOT(leaf, sharded_whole);
        /* (compared by value, identity first: an argument may come from another program over these devices) */
        if (layout == NULL || whole == NULL || whole == Py_None || !PyTuple_Check(layout) ||
            PyTuple_GET_SIZE(layout) != 2 || PyObject_RichCompareBool(PyTuple_GET_ITEM(layout, 0), taken, Py_EQ) != 1 ||
            PyObject_RichCompareBool(PyTuple_GET_ITEM(layout, 1), devices, Py_EQ) != 1 || !blocks_alive(leaf, whole))
            goto refuse;
        PyList_SET_ITEM(arguments, n_leading + i, Py_NewRef(whole));
    }
    return arguments;
refuse:
    PyErr_Clear();
    Py_DECREF(arguments);
    return NULL;
}

/* A cache hit whose executable runs over several devices (its `native_call`, a MultiDeviceCall): the result, NULL
 * with the runtime's error when the program fails to run, NULL without an error when the Python path answers. */
static PyObject *run_multi(PyObject *statistics, PyObject *entry, PyObject *executable, PyObject *leaves) {
    if (multi_call_type == NULL)
        return NULL;
    PyObject *call = PyObject_GetAttr(executable, s_native_call), *arguments = NULL, *outputs = NULL;
    PyObject *result = NULL;
    if (call == NULL || !Py_IS_TYPE(call, multi_call_type) || (arguments = multi_arguments(call, leaves)) == NULL) {
        PyErr_Clear();
        goto done;
    }
    /* (pmap keeps no statistics: None) */
    if (statistics != Py_None && (count_hit(statistics) < 0 || count_hit(global_statistics) < 0)) {
        PyErr_Clear();
        goto done;
    }
    PyObject *results = PyObject_CallMethodOneArg(SLOT(call, multi_compiled), s_execute_sharded, arguments);
    if (results != NULL) {
        outputs = PyObject_CallMethodOneArg(results, s_consume_with_handlers, SLOT(call, multi_handlers));
        Py_DECREF(results);
    }
    if (outputs != NULL)
        result = wrap_outputs(entry, NULL, call, outputs, 1);
done:
    Py_XDECREF(outputs);
    Py_XDECREF(arguments);
    Py_XDECREF(call);
    return result;
}

/* --- the type ----------------------------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *entries;    /* the function's cache: signature key -> CacheEntry */
    PyObject *statistics; /* its JitStatistics (None: hits are not counted) */
    PyObject *last_key;   /* the key of the last hit, and its hash (see cached_entry) */
    Py_hash_t last_hash;
    char positional_only; /* no static arguments: a positional call's key is its signature alone */
} CachedCall;

/* Whether two keys are made of the same objects (tuples compared item by item): then their hashes are equal. */
static int same_objects(PyObject *a, PyObject *b) {
    if (a == b)
        return 1;
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
        if (!same_objects(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i)))
            return 0;
    return 1;
}

/* The cache entry under `key` (borrowed; NULL, with an error or not, when there is none). Hashing a key calls
 * ShapedArray's and NamedSharding's Python __hash__ once per argument; a step feeding its outputs to the next call
 * makes keys of the same objects each time, whose hash is the last hit's: the lookup is then told it. */
static PyObject *cached_entry(CachedCall *self, PyObject *key) {
#if PY_VERSION_HEX < 0x030D0000 /* (the dictionary lookup of a known hash is CPython's internal API after 3.12) */
    int known = self->last_key != NULL && same_objects(key, self->last_key);
    Py_hash_t hash = known ? self->last_hash : PyObject_Hash(key);
    if (hash == -1)
        return NULL;
    PyObject *entry = _PyDict_GetItem_KnownHash(self->entries, key, hash);
    if (entry != NULL && !known) {
        Py_XSETREF(self->last_key, Py_NewRef(key));
        self->last_hash = hash;
    }
    return entry;
#else
    return PyDict_GetItemWithError(self->entries, key);
#endif
}

/* A config flag's value (new reference); NULL with an error when it cannot be read. While no thread overrides a
 * flag, config's type is the plain one and the values are in its __dict__; otherwise its properties decide. */
static PyObject *config_value(PyObject *name) {
    if (Py_IS_TYPE(config, plain_config_type)) {
        PyObject *value = PyDict_GetItemWithError(config_dict, name);
        if (value != NULL)
            return Py_NewRef(value);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(config, name);
}

/* Is a config flag set? -1 with an error when it cannot be read. */
static int flag(PyObject *name) {
    PyObject *value = config_value(name);
    if (value == NULL)
        return -1;
    int set = PyObject_IsTrue(value);
    Py_DECREF(value);
    return set;
}

/* Is no trace in progress (the stack holds the eager trace alone)? 0 also when the stack cannot be read. */
static int outside_traces(void) {
    PyObject *stack = PyObject_GetAttr(trace_state, s_stack);
    Py_ssize_t depth = stack == NULL ? -1 : PyObject_Length(stack);
    Py_XDECREF(stack);
    if (depth < 0)
        PyErr_Clear();
    return depth == 1;
}

/* A cached call's result; NULL without an error: the Python path answers this call. */
static PyObject *call_cached(CachedCall *self, PyObject *args) {
    if (self->entries == NULL || !PyDict_Check(self->entries) || self->statistics == NULL || !self->positional_only)
        return NULL;
    if (flag(s_disable_jit) != 0 || flag(s_native_dispatch) != 1 || flag(s_check_numerics) != 0) {
        PyErr_Clear();
        return NULL;
    }
    if (!outside_traces()) /* arguments may be staged */
        return NULL;
    PyObject *leaves = PyList_New(0), *signature = NULL, *key = NULL, *entry = NULL, *outputs = NULL;
    PyObject *result = NULL, *executable = NULL;
    if (leaves == NULL || (signature = signature_of(args, leaves)) == NULL)
        goto done;
    /* The flags a trace depends on, read as the calling thread sees them (a context manager's value included). */
    PyObject *x64 = config_value(s_enable_x64);
    PyObject *device = x64 == NULL ? NULL : config_value(s_default_device);
    PyObject *dtype_promotion = device == NULL ? NULL : config_value(s_numpy_dtype_promotion);
    PyObject *rank_promotion = dtype_promotion == NULL ? NULL : config_value(s_numpy_rank_promotion);
    if (rank_promotion != NULL) /* as PjitFunction._call's */
        key = PyTuple_Pack(7, signature, Py_None, empty_tuple, x64, device, dtype_promotion, rank_promotion);
    Py_XDECREF(x64);
    Py_XDECREF(device);
    Py_XDECREF(dtype_promotion);
    Py_XDECREF(rank_promotion);
    if (key == NULL)
        goto done;
    /* New references: another thread may clear the cache while the program runs. */
    entry = Py_XNewRef(cached_entry(self, key));
    if (entry == NULL || !Py_IS_TYPE(entry, entry_type) || SLOT(entry, entry_donated) != Py_None)
        goto done;
    executable = Py_XNewRef(SLOT(entry, entry_executable));
    if (executable == NULL)
        goto done;
    if (!Py_IS_TYPE(executable, executable_type)) {
        result = run_multi(self->statistics, entry, executable, leaves);
        if (result == NULL && PyErr_Occurred())
            goto failed; /* the program failed to run: the runtime's error, as the Python path raises it */
        goto done;
    }
    PyObject *callbacks = SLOT(executable, ex_host_callbacks);
    if (callbacks == NULL || PyObject_IsTrue(callbacks) != 0) /* its runtime token is kept: Executable.execute */
        goto done;
    if (count_hit(self->statistics) < 0 || count_hit(global_statistics) < 0)
        goto done;
    outputs = run(executable, leaves);
    if (outputs == NULL)
        goto failed; /* the Python path's own error, raised by run_on: reported as it is */
    result = wrap_outputs(entry, executable, NULL, outputs, any_committed(leaves));
    if (result == NULL)
        goto failed;
    goto done;
failed:
    Py_XDECREF(outputs);
    Py_DECREF(executable);
    Py_DECREF(entry);
    Py_DECREF(key);
    Py_DECREF(signature);
    Py_DECREF(leaves);
    return NULL;
done:
    if (result == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError))
        PyErr_Clear();
    Py_XDECREF(outputs);
    Py_XDECREF(executable);
    Py_XDECREF(entry);
    Py_XDECREF(key);
    Py_XDECREF(signature);
    Py_XDECREF(leaves);
    return result;
}

static PyObject *CachedCall_call(CachedCall *self, PyObject *args, PyObject *kwargs) {
    if (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0) {
        PyObject *result = call_cached(self, args);
        if (result != NULL || PyErr_Occurred())
            return result;
    }
    PyObject *slow = PyObject_GetAttr((PyObject *)self, s_call);
    if (slow == NULL)
        return NULL;
    PyObject *result = PyObject_Call(slow, args, kwargs);
    Py_DECREF(slow);
    return result;
}

static int CachedCall_traverse(CachedCall *self, visitproc visit, void *arg) {
    Py_VISIT(self->entries);
    Py_VISIT(self->statistics);
    Py_VISIT(self->last_key);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int CachedCall_clear(CachedCall *self) {
    Py_CLEAR(self->entries);
    Py_CLEAR(self->statistics);
    Py_CLEAR(self->last_key);
    return 0;
}

static void CachedCall_dealloc(CachedCall *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    CachedCall_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef CachedCall_members[] = {
    {"_native_entries", T_OBJECT, offsetof(CachedCall, entries), 0, "the cache's entries dictionary"},
    {"_native_statistics", T_OBJECT, offsetof(CachedCall, statistics), 0, "the function's JitStatistics"},
    {"_native_positional", T_BOOL, offsetof(CachedCall, positional_only), 0, "positional calls may go native"},
    {NULL},
};

static PyType_Slot CachedCall_slots[] = {
    {Py_tp_doc, "Base of numax.jit's callable: answers cache hits natively, calls self._call otherwise."},
    {Py_tp_call, CachedCall_call},
    {Py_tp_traverse, CachedCall_traverse},
    {Py_tp_clear, CachedCall_clear},
    {Py_tp_dealloc, CachedCall_dealloc},
    {Py_tp_members, CachedCall_members},
    {0, NULL},
};

static PyType_Spec CachedCall_spec = {
    "numax.lowering._native_dispatch.CachedCall", sizeof(CachedCall), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, CachedCall_slots,
};

/* --- eager one-argument primitives -------------------------------------------------------------- */
/* eager_unary(primitive, x): eager `primitive(x)` of an Array outside every trace, run by the executable the eager
 * fast path compiled for (primitive, x's aval, x's device). Any other case goes to the Python function, which
 * compiles on a miss, or answers None (the general path decides). A failed run answers None too: the general
 * path names the problem (a deleted argument, say). */
static PyObject *eager_unary(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || eager_table == NULL) {
        PyErr_SetString(PyExc_TypeError, "eager_unary(primitive, x) before configure_eager");
        return NULL;
    }
    PyObject *x = args[1], *executable = NULL;
    if (Py_IS_TYPE(x, array_type) && SLOT(x, array_buffer) != NULL && flag(s_check_numerics) == 0 &&
        outside_traces()) {
        PyObject *key = PyTuple_Pack(3, args[0], SLOT(x, array_aval), SLOT(x, array_device));
        if (key == NULL)
            return NULL;
        executable = Py_XNewRef(PyDict_GetItemWithError(eager_table, key));
        Py_DECREF(key);
    }
    PyErr_Clear();
    if (executable == NULL || !Py_IS_TYPE(executable, executable_type)) {
        Py_XDECREF(executable);
        return PyObject_Vectorcall(eager_unary_miss, args, nargs, NULL);
    }
    PyObject *buffers = PyList_New(1), *result = NULL;
    if (buffers != NULL) {
        PyList_SET_ITEM(buffers, 0, Py_NewRef(SLOT(x, array_buffer)));
        result = run_single_output(executable, buffers, SLOT(x, array_committed) == Py_True);
        Py_DECREF(buffers);
    }
    Py_DECREF(executable);
    if (result == NULL && !PyErr_ExceptionMatches(PyExc_MemoryError)) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
    }
    return result;
}

/* --- ArrayBase: numax.Array's waits and readback ------------------------------------------------ */
/* Whether a wait on the Array's backend polls readiness first (a GPU's; xla.Backend.polls_waits). The last backend
 * found not to poll is kept, so that a CPU wait asks no attribute. */
static PyObject *blocking_backend;

static int waits_poll(PyObject *self) {
    PyObject *backend = SLOT(self, array_backend);
    if (backend == NULL || backend == blocking_backend)
        return backend == NULL;
    PyObject *polls = PyObject_GetAttr(backend, s_polls_waits);
    int answer = polls != Py_False;
    Py_XDECREF(polls);
    PyErr_Clear();
    if (!answer)
        Py_XSETREF(blocking_backend, Py_NewRef(backend));
    return answer;
}

/* The error being raised, taken out (NULL if none), and put back. */
static PyObject *take_error(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (value != NULL && traceback != NULL)
        PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    return value;
#endif
}

static void put_error(PyObject *error) {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(error);
#else
    PyErr_Restore(Py_NewRef(Py_TYPE(error)), error, PyException_GetTraceback(error));
#endif
}

/* A live or deleted buffer on a backend whose waits block (a CPU's): the runtime's blocking wait alone, one call,
 * which raises for a failed program and for a deleted buffer. Returns self; NULL with the program's error; or NULL
 * without an error for a deleted buffer, which the Python method reports in numax's words. */
static PyObject *wait_blocking(PyObject *self, PyObject *buffer) {
    PyObject *waited = PyObject_CallMethodNoArgs(buffer, s_block_until_ready);
    if (waited != NULL) {
        Py_DECREF(waited);
        Py_XSETREF(SLOT(self, array_ready), Py_NewRef(Py_True));
        return Py_NewRef(self);
    }
    PyObject *error = take_error();
    PyObject *deleted = PyObject_CallMethodNoArgs(buffer, s_is_deleted);
    int was_deleted = deleted == Py_True;
    Py_XDECREF(deleted);
    PyErr_Clear();
    if (was_deleted || error == NULL)
        Py_XDECREF(error);
    else
        put_error(error);
    return NULL;
}

/* Array.block_until_ready(): a plain Array whose live buffer was waited for is answered after a deletion check.
 * Another plain Array on a backend whose waits block is waited for here (wait_blocking). On a backend whose waits
 * poll, one that is ready now is answered here (the runtime's wait raises the program's error, if it failed); one
 * still running goes to the Python method, which polls. A deleted buffer, and a subclass, go to the Python method
 * too. (The deletion check comes before is_ready(): jaxlib's is_ready() crashes the process on a deleted
 * buffer.) */
static PyObject *ArrayBase_block_until_ready(PyObject *self, PyObject *unused) {
    PyObject *buffer = Py_IS_TYPE(self, array_type) ? SLOT(self, array_buffer) : NULL;
    if (buffer != NULL && SLOT(self, array_ready) != Py_True && !waits_poll(self)) {
        PyObject *result = wait_blocking(self, buffer);
        if (result != NULL || PyErr_Occurred())
            return result;
        buffer = NULL;
    }
    if (buffer != NULL) {
        PyObject *deleted = PyObject_CallMethodNoArgs(buffer, s_is_deleted);
        int answered = 0;
        if (deleted == Py_False && SLOT(self, array_ready) == Py_True) {
            answered = 1;
        } else if (deleted == Py_False) {
            PyObject *ready = PyObject_CallMethodNoArgs(buffer, s_is_ready);
            if (ready == Py_True) {
                PyObject *waited = PyObject_CallMethodNoArgs(buffer, s_block_until_ready);
                if (waited == NULL) {
                    Py_DECREF(ready);
                    Py_DECREF(deleted);
                    return NULL; /* the program's error, as the Python method raises it */
                }
                Py_DECREF(waited);
                Py_XSETREF(SLOT(self, array_ready), Py_NewRef(Py_True));
                answered = 1;
            }
            Py_XDECREF(ready);
        }
        Py_XDECREF(deleted);
        PyErr_Clear();
        if (answered)
            return Py_NewRef(self);
    }
    return PyObject_CallMethodNoArgs(self, s_python_block_until_ready);
}

/* The host value of a plain Array's CPU buffer of a numpy dtype: a read-only view through the buffer protocol,
 * cached on the Array. NULL without an error: the Python method reads it (or says why it cannot). */
static PyObject *read_cpu_buffer(PyObject *self) {
    PyObject *buffer = SLOT(self, array_buffer), *backend = SLOT(self, array_backend), *aval = SLOT(self, array_aval);
    if (buffer == NULL || backend == NULL || aval == NULL)
        return NULL;
    PyObject *dtype = PyObject_GetAttr(aval, s_dtype);
    int known = 0;
    for (Py_ssize_t i = 0; dtype != NULL && i < PyTuple_GET_SIZE(buffer_dtypes); i++)
        known |= PyTuple_GET_ITEM(buffer_dtypes, i) == dtype;
    Py_XDECREF(dtype);
    PyObject *platform = known ? PyObject_GetAttr(backend, s_platform) : NULL;
    int cpu = platform != NULL && PyUnicode_Check(platform) && PyUnicode_Compare(platform, s_cpu) == 0;
    Py_XDECREF(platform);
    PyObject *view = cpu ? PyMemoryView_FromObject(buffer) : NULL; /* waits for the buffer; fails if deleted */
    PyObject *host = NULL;
    if (view != NULL && PyMemoryView_GET_BUFFER(view)->readonly)
        host = PyObject_CallOneArg(numpy_asarray, view);
    Py_XDECREF(view);
    PyErr_Clear();
    if (host != NULL)
        Py_XSETREF(SLOT(self, array_host_value), Py_NewRef(host));
    return host;
}

/* Array.__array__(dtype=None, copy=None): with neither given, a plain Array's cached host value, or its CPU buffer
 * read once as above; every other case by the Python method. */
static PyObject *ArrayBase_array(PyObject *self, PyObject *const *args, Py_ssize_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    int plain = Py_IS_TYPE(self, array_type) && numpy_asarray != NULL;
    for (Py_ssize_t i = 0; i < total; i++)
        plain &= args[i] == Py_None;
    if (plain) {
        PyObject *host = SLOT(self, array_host_value);
        if (host != NULL && host != Py_None)
            return Py_NewRef(host);
        if ((host = read_cpu_buffer(self)) != NULL)
            return host;
    }
    PyObject *method = PyObject_GetAttr(self, s_python_array);
    if (method == NULL)
        return NULL;
    PyObject *result = PyObject_Vectorcall(method, args, nargs, kwnames);
    Py_DECREF(method);
    return result;
}

static PyMethodDef ArrayBase_methods[] = {
    {"block_until_ready", ArrayBase_block_until_ready, METH_NOARGS,
     "Waits until the array's value is computed; raises the program's error if it failed. Returns the array."},
    {"__array__", (PyCFunction)(void (*)(void))ArrayBase_array, METH_FASTCALL | METH_KEYWORDS,
     "The array's value as a read-only numpy array (copied or converted as dtype and copy ask)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot ArrayBase_slots[] = {
    {Py_tp_doc, "Base of numax.Array: its waits and readback in C (see lowering/array.py)."},
    {Py_tp_methods, ArrayBase_methods},
    {0, NULL},
};

static PyType_Spec ArrayBase_spec = {
    "numax.lowering._native_dispatch.ArrayBase", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    ArrayBase_slots,
};

/* --- module ------------------------------------------------------------------------------------- */
static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *array, *executable, *entry, *plain_config;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!OO", &PyType_Type, &array, &PyType_Type, &executable, &PyType_Type,
                          &entry, &config, &PyType_Type, &plain_config, &trace_state, &global_statistics))
        return NULL;
    array_type = (PyTypeObject *)Py_NewRef(array);
    executable_type = (PyTypeObject *)Py_NewRef(executable);
    entry_type = (PyTypeObject *)Py_NewRef(entry);
    Py_INCREF(config);
    Py_INCREF(trace_state);
    Py_INCREF(global_statistics);
    statistics_type = (PyTypeObject *)Py_NewRef(Py_TYPE(global_statistics));
    plain_config_type = (PyTypeObject *)Py_NewRef(plain_config);
    if ((config_dict = PyObject_GenericGetDict(config, NULL)) == NULL)
        return NULL;
    struct { Py_ssize_t *offset; PyTypeObject *type; const char *name; } slots[] = {
        {&array_aval, array_type, "aval"}, {&array_buffer, array_type, "_buffer"},
        {&array_backend, array_type, "_backend"}, {&array_device, array_type, "_device"},
        {&array_host_value, array_type, "_host_value"}, {&array_ready, array_type, "_ready"},
        {&array_committed, array_type, "_committed"},
        {&ex_compiled, executable_type, "compiled"}, {&ex_backend, executable_type, "backend"},
        {&ex_device, executable_type, "device"}, {&ex_const_buffers, executable_type, "const_buffers"},
        {&ex_handlers, executable_type, "handlers"}, {&ex_out_avals, executable_type, "out_avals"},
        {&ex_host_callbacks, executable_type, "host_callbacks"},
        {&entry_executable, entry_type, "executable"}, {&entry_out_tree, entry_type, "out_tree"},
        {&entry_donated, entry_type, "donated"}, {&entry_out_kind, entry_type, "out_kind"},
        {&entry_out_plan, entry_type, "out_plan"},
        {&statistics_cache_hits, statistics_type, "cache_hits"},
    };
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if ((*slots[i].offset = slot_offset(slots[i].type, slots[i].name)) < 0)
            return NULL;
    Py_RETURN_NONE;
}

static PyObject *configure_sharded(PyObject *module, PyObject *args) {
    PyObject *sharded, *call; /* (ShardedArray derives from Array, whose slots `configure` reads) */
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &sharded, &PyType_Type, &call))
        return NULL;
    struct { Py_ssize_t *offset; PyTypeObject *type; const char *name; } slots[] = {
        {&sharded_parts, (PyTypeObject *)sharded, "_parts"}, {&sharded_whole, (PyTypeObject *)sharded, "_whole"},
        {&sharded_whole_layout, (PyTypeObject *)sharded, "_whole_layout"},
        {&sharded_sharding, (PyTypeObject *)sharded, "_sharding"},
        {&sharded_indices, (PyTypeObject *)sharded, "_indices"},
        {&multi_compiled, (PyTypeObject *)call, "compiled"}, {&multi_handlers, (PyTypeObject *)call, "handlers"},
        {&multi_devices, (PyTypeObject *)call, "devices"}, {&multi_backend, (PyTypeObject *)call, "backend"},
        {&multi_out_avals, (PyTypeObject *)call, "out_avals"},
        {&multi_out_shardings, (PyTypeObject *)call, "out_shardings"},
        {&multi_out_layouts, (PyTypeObject *)call, "out_layouts"},
        {&multi_native_in, (PyTypeObject *)call, "native_in"}, {&multi_leading, (PyTypeObject *)call, "leading"},
    };
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if ((*slots[i].offset = slot_offset(slots[i].type, slots[i].name)) < 0)
            return NULL;
    Py_XSETREF(sharded_type, (PyTypeObject *)Py_NewRef(sharded));
    Py_XSETREF(multi_call_type, (PyTypeObject *)Py_NewRef(call));
    Py_RETURN_NONE;
}

static PyObject *configure_arrays(PyObject *module, PyObject *args) {
    PyObject *asarray, *dtypes;
    if (!PyArg_ParseTuple(args, "OO!", &asarray, &PyTuple_Type, &dtypes))
        return NULL;
    Py_XSETREF(numpy_asarray, Py_NewRef(asarray));
    Py_XSETREF(buffer_dtypes, Py_NewRef(dtypes));
    Py_RETURN_NONE;
}

static PyObject *configure_eager(PyObject *module, PyObject *args) {
    PyObject *table, *miss;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &table, &miss))
        return NULL;
    Py_XSETREF(eager_table, Py_NewRef(table));
    Py_XSETREF(eager_unary_miss, Py_NewRef(miss));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Array, Executable, CacheEntry, config, Config, trace_state, global_statistics): the types and "
     "state the native path reads (Config: config's class while no thread overrides a flag)."},
    {"configure_sharded", configure_sharded, METH_VARARGS,
     "configure_sharded(ShardedArray, MultiDeviceCall): the types of arrays and calls over several devices, whose "
     "cache hits the native path then answers too."},
    {"configure_arrays", configure_arrays, METH_VARARGS,
     "configure_arrays(numpy.asarray, dtypes): what Array's readback uses (dtypes: a tuple of the numpy dtypes a "
     "CPU buffer is read back as through the buffer protocol)."},
    {"configure_eager", configure_eager, METH_VARARGS,
     "configure_eager(table, miss): eager_unary's executables, {(primitive, aval, device): Executable}, and the "
     "Python function that answers what the table does not."},
    {"eager_unary", (PyCFunction)(void (*)(void))eager_unary, METH_FASTCALL,
     "eager_unary(primitive, x): eager primitive(x) by a compiled eager executable, else the Python function."},
    {"run_single", (PyCFunction)(void (*)(void))run_single, METH_FASTCALL,
     "run_single(executable, buffers): the one output of running a one-device Executable, as an Array."},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module) {
    struct { PyObject **name; const char *text; } names[] = {
        {&s_disable_jit, "disable_jit"}, {&s_native_dispatch, "native_dispatch"},
        {&s_check_numerics, "check_numerics"}, {&s_enable_x64, "enable_x64"},
        {&s_default_device, "default_device"}, {&s_numpy_dtype_promotion, "numpy_dtype_promotion"},
        {&s_numpy_rank_promotion, "numpy_rank_promotion"}, {&s_stack, "stack"}, {&s_cache_hits, "cache_hits"},
        {&s_call, "_call"}, {&s_execute_sharded, "execute_sharded"},
        {&s_consume_with_handlers, "consume_with_handlers"}, {&s_run_on, "run_on"}, {&s_unflatten, "unflatten"},
        {&s_is_deleted, "is_deleted"}, {&s_is_ready, "is_ready"}, {&s_block_until_ready, "block_until_ready"},
        {&s_python_block_until_ready, "_python_block_until_ready"}, {&s_python_array, "_python_array"},
        {&s_platform, "platform"}, {&s_cpu, "cpu"}, {&s_dtype, "dtype"}, {&s_polls_waits, "polls_waits"},
        {&s_native_call, "native_call"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return -1;
    if ((empty_tuple = PyTuple_New(0)) == NULL || (one = PyLong_FromLong(1)) == NULL)
        return -1;
    struct { PyType_Spec *spec; const char *name; } types[] = {
        {&CachedCall_spec, "CachedCall"}, {&ArrayBase_spec, "ArrayBase"},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        PyObject *type = PyType_FromSpec(types[i].spec);
        if (type == NULL || PyModule_AddObject(module, types[i].name, type) < 0) {
            Py_XDECREF(type);
            return -1;
        }
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, exec_module}, {0, NULL}};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "numax.lowering._native_dispatch",
    "numax's native call path for jitted functions (see lowering/native_dispatch.py).", 0, methods,
    module_slots,
};

PyMODINIT_FUNC PyInit__native_dispatch(void) { return PyModuleDef_Init(&module_definition); }
