import java.util.Objects;

public class TestMain {
    static int failed = 0;

    static void eq(Object got, Object want) {
        if (!Objects.equals(got, want)) {
            throw new AssertionError("expected <" + want + "> but was <" + got + ">");
        }
    }

    interface Body { void run() throws Exception; }

    static void test(String name, Body body) {
        long start = System.nanoTime();
        try {
            body.run();
            System.out.printf("test %-22s ok (%d us)%n", name, (System.nanoTime() - start) / 1000);
        } catch (Throwable e) {
            failed++;
            System.out.printf("test %-22s FAILED%n", name);
            e.printStackTrace(System.out);
        }
    }

    public static void main(String[] args) {
        test("addsTwoNumbers", () -> eq(Calc.add(2, 3), 5));
        test("subtracts", () -> eq(Calc.sub(7, 3), 4));
        test("multiplies", () -> eq(Calc.mul(6, 7), 42));
        test("dividesEvenly", () -> eq(Calc.div(12, 4), 3));
        test("dividesRoundingDown", () -> eq(Calc.div(7, 2), 3));
        test("clampsLow", () -> eq(Calc.clamp(-5, 0, 10), 0));
        test("clampsHigh", () -> eq(Calc.clamp(50, 0, 10), 10));
        test("clampsInside", () -> eq(Calc.clamp(5, 0, 10), 5));
        test("parsesPlain", () -> eq(Calc.parse("42"), 42));
        test("parsesSpaces", () -> eq(Calc.parse("  17 "), 17));
        test("parsesNegative", () -> eq(Calc.parse("-8"), -8));
        test("sumsList", () -> eq(Stats.sum(new int[] {1, 2, 3, 4}), 10));
        test("meanOfList", () -> eq(Stats.mean(new int[] {2, 4, 6}), 4));
        test("maxOfList", () -> eq(Stats.max(new int[] {3, 9, 1}), 9));
        test("minOfList", () -> eq(Stats.min(new int[] {3, 9, 1}), 1));
        test("medianOdd", () -> eq(Stats.median(new int[] {5, 1, 3}), 3));
        test("medianEven", () -> eq(Stats.median(new int[] {4, 1, 3, 2}), 2));
        test("wordsCounted", () -> eq(Text.words("a bb  ccc"), 3));
        test("wordsOfBlank", () -> eq(Text.words("   "), 0));
        test("reversed", () -> eq(Text.reverse("abc"), "cba"));
        test("capitalized", () -> eq(Text.capitalize("hello"), "Hello"));
        test("capitalizedEmpty", () -> eq(Text.capitalize(""), ""));
        test("padsLeft", () -> eq(Text.padLeft("7", 3, '0'), "007"));
        test("initials", () -> eq(Text.initials("Ada King Lovelace"), "AKL"));
        System.out.printf("%d tests, %d failed%n", 24, failed);
        if (failed > 0) System.exit(1);
    }
}
