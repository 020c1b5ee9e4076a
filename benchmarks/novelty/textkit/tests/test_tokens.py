import unittest

from textkit.tokens import TokenError, tokenize


class TokenizeTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(tokenize("1 + 2.5"), [("num", "1"), ("op", "+"), ("num", "2.5")])

    def test_names(self):
        self.assertEqual(tokenize("x1*y"), [("name", "x1"), ("op", "*"), ("name", "y")])

    def test_parens(self):
        self.assertEqual([t for _, t in tokenize("(a)")], ["(", "a", ")"])

    def test_whitespace(self):
        self.assertEqual(tokenize("  7  "), [("num", "7")])

    def test_error_on_unknown_character(self):
        with self.assertRaises(TokenError) as caught:
            tokenize("1 $ 2")
        self.assertEqual(caught.exception.position, 2)

    def test_error_message(self):
        with self.assertRaisesRegex(TokenError, "unexpected '#' at 0"):
            tokenize("#")

    def test_long_expression(self):
        self.assertEqual(len(tokenize("1+2*3-4/5+(6*7)")), 15)

    def test_failed_parse_keeps_nothing(self):
        with self.assertRaises(TokenError):
            tokenize("a ? b")
