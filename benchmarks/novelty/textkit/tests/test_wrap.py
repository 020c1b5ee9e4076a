import unittest

from textkit.wrap import indent, wrap

TEXT = "the quick brown fox jumps over the lazy dog"


class WrapTest(unittest.TestCase):
    def test_wrap_10(self):
        self.assertEqual(wrap(TEXT, 10), ["the quick", "brown fox", "jumps over", "the lazy", "dog"])

    def test_wrap_20(self):
        self.assertEqual(wrap(TEXT, 20), ["the quick brown fox", "jumps over the lazy", "dog"])

    def test_wrap_wide(self):
        self.assertEqual(wrap(TEXT, 100), [TEXT])

    def test_long_word(self):
        self.assertEqual(wrap("a supercalifragilistic b", 5), ["a", "supercalifragilistic", "b"])

    def test_empty(self):
        self.assertEqual(wrap("", 10), [])

    def test_indent(self):
        self.assertEqual(indent(["a", "", "b"]), ["    a", "", "    b"])

    def test_indent_prefix(self):
        self.assertEqual(indent(["a"], "> "), ["> a"])
