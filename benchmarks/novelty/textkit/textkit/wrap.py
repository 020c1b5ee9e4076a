def wrap(text, width):
    """Greedy word wrap: lines of at most ``width`` characters (a longer word is a line of its own)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def indent(lines, prefix="    "):
    return [prefix + line if line else line for line in lines]
