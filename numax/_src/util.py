"""`jax._src.util`'s small list helpers that interpreters written against jax use (`safe_map`, `safe_zip`,
`unzip2`): `map` and `zip` that refuse arguments of different lengths instead of silently truncating."""


def _same_lengths(function_name, sequences):
    lengths = [len(s) for s in sequences]
    if any(n != lengths[0] for n in lengths[1:]):
        raise ValueError(f"{function_name}: arguments have different lengths {lengths}")
    return sequences


def safe_map(f, *sequences):
    """`list(map(f, *sequences))`, all sequences of one length (else ValueError)."""
    sequences = _same_lengths("safe_map", [list(s) for s in sequences])
    return list(map(f, *sequences))


def safe_zip(*sequences):
    """`list(zip(*sequences))`, all sequences of one length (else ValueError)."""
    sequences = _same_lengths("safe_zip", [list(s) for s in sequences])
    return list(zip(*sequences))


def unzip2(pairs):
    """Two tuples from a sequence of pairs: `([a for a, _ in pairs], [b for _, b in pairs])` as tuples."""
    firsts, seconds = [], []
    for first, second in pairs:
        firsts.append(first)
        seconds.append(second)
    return tuple(firsts), tuple(seconds)
