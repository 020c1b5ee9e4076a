public final class Calc {
    private Calc() {}

    public static int add(int a, int b) { return a + b; }
    public static int sub(int a, int b) { return a - b; }
    public static int mul(int a, int b) { return a * b; }
    public static int div(int a, int b) { return Math.floorDiv(a, b); }

    public static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }

    public static int parse(String text) {
        return Integer.parseInt(text.trim());
    }
}
