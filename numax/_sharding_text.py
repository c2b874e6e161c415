"""Drawing a sharding as text: which devices hold each block of a 1-D or 2-D array.

`render_sharding` returns plain box-drawing text and needs nothing beyond the standard library; its layout is
the one `jax.debug.visualize_array_sharding` draws (a block's size on screen follows its share of the array,
each block labelled with its platform and device ids), character for character wherever that table fits in
`max_width` (past it, columns shrink to their labels where rich would cut the labels short).
`visualize_sharding` prints the drawing, through `rich` (with colors) when it is installed, as JAX does.
"""

import importlib.util
from dataclasses import dataclass

import numpy as np

_HEIGHT_TO_WIDTH = 2.5  # a terminal cell is about two and a half times as tall as it is wide


@dataclass(frozen=True)
class _Cell:
    """One block of the drawing: its label and the padding around it (top, right, bottom, left, as rich's),
    before clamping at zero (coloured blocks add one to each side first)."""

    label: str
    padding: tuple


def _block_number(size, index):
    """Which block along one dimension an index slice is (all of it: block 0)."""
    if index.start is None and index.stop is None:
        return 0
    return index.start // (index.stop - index.start)


def _block_fraction(size, index):
    """The share of one dimension an index slice covers."""
    return 1.0 if index.stop is None else (index.stop - index.start) / size


def _layout(shape, sharding, scale, min_width, max_width):
    """The drawing as rows of cells: row and column of each block, device ids, and padding sized to the block."""
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise ValueError(f"a sharding can be drawn only for 1-D and 2-D arrays, got shape {shape}")
    platform = next(iter(sharding.device_set)).platform.upper()
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    holders, fractions = {}, {}
    for device, index in sharding.devices_indices_map(shape).items():
        # A 1-D array is drawn as one row of blocks, one text line high.
        place = tuple(map(_block_number, shape, index))
        place = place if len(shape) == 2 else (0, *place)
        holders.setdefault(place, []).append(device.id)
        fractions[place] = tuple(map(_block_fraction, shape, index))
    num_rows = 1 + max(row for row, _ in holders)
    num_cols = 1 + max(col for _, col in holders)
    rows = []
    for row in range(num_rows):
        cells = []
        for col in range(num_cols):
            label = f"{platform} " + ",".join(map(str, sorted(holders[row, col])))
            *height_fraction, width_fraction = fractions[row, col]
            height = int(height_fraction[0] * base_height) if height_fraction else 1
            width = min(max(int(width_fraction * base_width * _HEIGHT_TO_WIDTH), min_width), max_width)
            left, odd = divmod(width - len(label) - 2, 2)
            top, odd_height = divmod(height - 2, 2)
            padding = (top, left + odd, top + odd_height, left)
            cells.append(_Cell(label, padding))
        rows.append(cells)
    return rows


def _clamped(padding, extra=0):
    return tuple(max(pad + extra, 0) for pad in padding)


def _column_widths(rows, max_width):
    """Each column as wide as its widest padded cell; shrunk toward its longest label if the table is too wide."""
    widths = [max(sum(_clamped(cell.padding)[1::2]) + len(cell.label) for cell in column) for column in zip(*rows)]
    available = max_width - len(widths) - 1  # the vertical rules
    if sum(widths) <= available:
        return widths
    least = [max(len(cell.label) for cell in column) for column in zip(*rows)]
    slack = sum(widths) - sum(least)
    room = max(available - sum(least), 0)
    return [low + (width - low) * room // slack for width, low in zip(widths, least)]


def _cell_lines(cell, width):
    """A cell's text lines at a column width: the label centred between its left and right padding."""
    top, right, bottom, left = _clamped(cell.padding)
    if left + len(cell.label) + right > width:  # a shrunk column: centre the label in what is left
        left = right = 0
    inner = width - left - right
    before = (inner - len(cell.label)) // 2
    label_line = " " * (left + before) + cell.label + " " * (inner - before - len(cell.label) + right)
    return [" " * width] * top + [label_line] + [" " * width] * bottom


def _rule(widths, left, middle, right):
    return left + middle.join("─" * width for width in widths) + right


def render_sharding(shape, sharding, *, scale=1.0, min_width=9, max_width=80):
    """The blocks of an array of `shape` under `sharding` as a box-drawing table: each block shows the
    platform and the ids of the devices holding it (several ids where it is replicated)."""
    rows = _layout(shape, sharding, scale, min_width, max_width)
    widths = _column_widths(rows, max_width)
    lines = [_rule(widths, "┌", "┬", "┐")]
    for number, cells in enumerate(rows):
        if number:
            lines.append(_rule(widths, "├", "┼", "┤"))
        columns = [_cell_lines(cell, width) for cell, width in zip(cells, widths)]
        height = max(map(len, columns))
        columns = [column + [" " * width] * (height - len(column)) for column, width in zip(columns, widths)]
        lines.extend("│" + "│".join(parts) + "│" for parts in zip(*columns))
    lines.append(_rule(widths, "└", "┴", "┘"))
    return "\n".join(lines)


def _rich_is_installed():
    return importlib.util.find_spec("rich") is not None


def _colors(color_map, count):
    """`count` colours from a colour map, stepping about half way round it each time so neighbours differ."""
    values = np.linspace(0, 1, count)
    step = count // 2 + (count % 2 == 0)
    for turn in range(count):
        red, green, blue = (int(channel * 255) for channel in color_map(values[turn * step % count])[:3])
        yield f"#{red:02X}{green:02X}{blue:02X}"


def _text_color(background):
    red, green, blue = (int(background[i:i + 2], 16) for i in (1, 3, 5))
    return "#000000" if red * 0.299 + green * 0.587 + blue * 0.114 > 186 else "#ffffff"


def _default_color_map():
    """matplotlib's tab20b, as JAX uses, or None (no colours) without matplotlib."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        return None
    return matplotlib.colormaps["tab20b"]


def _print_with_rich(rows, use_color, max_width, color_map):
    import rich.align
    import rich.box
    import rich.console
    import rich.padding
    import rich.style
    import rich.table

    console = rich.console.Console(width=max_width)
    color_map = color_map or (_default_color_map() if use_color and console.color_system else None)
    use_color = use_color and console.color_system is not None and color_map is not None
    table = rich.table.Table(show_header=False, show_lines=not use_color, padding=0, highlight=not use_color,
                             pad_edge=False, box=None if use_color else rich.box.SQUARE)
    colors = _colors(color_map, len(rows) * len(rows[0])) if use_color else None
    for cells in rows:
        row = []
        for cell in cells:
            style, padding = rich.style.Style(), _clamped(cell.padding)
            if use_color:
                background = next(colors)
                style = rich.style.Style(bgcolor=background, color=_text_color(background))
                padding = _clamped(cell.padding, 1)  # colour shows the block's edges: no rules, wider cells
            content = rich.align.Align(cell.label, "center", vertical="middle")
            row.append(rich.padding.Padding(content, padding, style=style))
        table.add_row(*row)
    console.print(table, end="\n\n")


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9, max_width=80, color_map=None):
    """Prints which devices hold each block of a 1-D or 2-D array: through rich (coloured blocks in a terminal)
    when it is installed, as `jax.debug.visualize_sharding`, and as `render_sharding`'s text otherwise."""
    if not _rich_is_installed():
        print(render_sharding(shape, sharding, scale=scale, min_width=min_width, max_width=max_width))
        return
    _print_with_rich(_layout(shape, sharding, scale, min_width, max_width), use_color, max_width, color_map)
