public final class Text {
    private Text() {}

    public static int words(String s) {
        String t = s.trim();
        return t.isEmpty() ? 0 : t.split("\\s+").length;
    }

    public static String reverse(String s) { return new StringBuilder(s).reverse().toString(); }

    public static String capitalize(String s) {
        if (s.isEmpty()) return s;
        return Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }

    public static String padLeft(String s, int width, char pad) {
        StringBuilder b = new StringBuilder();
        for (int i = s.length(); i < width; i++) b.append(pad);
        return b.append(s).toString();
    }

    public static String initials(String name) {
        StringBuilder b = new StringBuilder();
        for (String part : name.trim().split("\\s+")) b.append(part.charAt(0));
        return b.toString();
    }
}
