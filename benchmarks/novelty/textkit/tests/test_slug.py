import unittest

from textkit.slug import slugify, unique_slug


class SlugTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_accents(self):
        self.assertEqual(slugify("Crème brûlée"), "creme-brulee")

    def test_punctuation(self):
        self.assertEqual(slugify("Error: it failed!"), "error-it-failed")

    def test_separator(self):
        self.assertEqual(slugify("a b c", sep="_"), "a_b_c")

    def test_empty(self):
        self.assertEqual(slugify("!!!"), "")

    def test_unique_slug(self):
        self.assertEqual(unique_slug("Post", {"post"}), "post-2")

    def test_unique_slug_many(self):
        self.assertEqual(unique_slug("Post", {"post", "post-2", "post-3"}), "post-4")

    def test_unique_slug_free(self):
        self.assertEqual(unique_slug("New", {"post"}), "new")
