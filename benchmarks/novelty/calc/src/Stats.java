import java.util.Arrays;

public final class Stats {
    private Stats() {}

    public static int sum(int[] xs) {
        int total = 0;
        for (int x : xs) total += x;
        return total;
    }

    public static int mean(int[] xs) { return sum(xs) / xs.length; }

    public static int max(int[] xs) { return Arrays.stream(xs).max().getAsInt(); }

    public static int min(int[] xs) { return Arrays.stream(xs).min().getAsInt(); }

    public static int median(int[] xs) {
        int[] sorted = xs.clone();
        Arrays.sort(sorted);
        return sorted[(sorted.length - 1) / 2];
    }
}
