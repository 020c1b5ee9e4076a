import unittest

from textkit.numbers import human_size, ordinal, roman


class OrdinalTest(unittest.TestCase):
    def test_first(self):
        self.assertEqual(ordinal(1), "1st")

    def test_second(self):
        self.assertEqual(ordinal(2), "2nd")

    def test_third(self):
        self.assertEqual(ordinal(3), "3rd")

    def test_eleventh(self):
        self.assertEqual(ordinal(11), "11th")

    def test_twenty_first(self):
        self.assertEqual(ordinal(21), "21st")

    def test_hundred_twelfth(self):
        self.assertEqual(ordinal(112), "112th")


class HumanSizeTest(unittest.TestCase):
    def test_bytes(self):
        self.assertEqual(human_size(512), "512 B")

    def test_kilobytes(self):
        self.assertEqual(human_size(2048), "2.0 KB")

    def test_megabytes(self):
        self.assertEqual(human_size(5 * 1024 * 1024), "5.0 MB")

    def test_gigabytes(self):
        self.assertEqual(human_size(3 * 1024**3), "3.0 GB")

    def test_terabytes_stay_in_gigabytes(self):
        self.assertEqual(human_size(2 * 1024**4), "2048.0 GB")


class RomanTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual([roman(n) for n in (1, 4, 9, 14)], ["I", "IV", "IX", "XIV"])

    def test_year(self):
        self.assertEqual(roman(1994), "MCMXCIV")

    def test_largest(self):
        self.assertEqual(roman(3999), "MMMCMXCIX")

    def test_error_on_zero(self):
        with self.assertRaises(ValueError):
            roman(0)

    def test_error_on_too_large(self):
        with self.assertRaisesRegex(ValueError, "out of range"):
            roman(4000)
