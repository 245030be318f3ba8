import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Properties;
import java.util.TreeSet;

/** Reads .properties text from stdin (UTF-8) with java.util.Properties.load and prints each
 * entry as "hex(key) hex(value)", keys sorted: what tests/test_properties.py holds
 * pipeline/properties.py to. */
public final class PrintProperties {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.load(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        HexFormat hex = HexFormat.of();
        for (String key : new TreeSet<>(props.stringPropertyNames())) {
            System.out.println(hex.formatHex(key.getBytes(StandardCharsets.UTF_8)) + " "
                + hex.formatHex(props.getProperty(key).getBytes(StandardCharsets.UTF_8)));
        }
    }
}
