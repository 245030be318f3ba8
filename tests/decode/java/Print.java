// What every program here shares: the two topic ids and the output line
// (name, key hex, value hex or "null" for a tombstone). Compiled with each program.

import org.apache.kafka.common.Uuid;

final class Print {
    static final Uuid TOPIC_A = new Uuid(0x0001020304050607L, 0x08090a0b0c0d0e0fL);
    static final Uuid TOPIC_B = new Uuid(0x6465666768696a6bL, 0x6c6d6e6f70717273L);

    private Print() { }

    static String hex(byte[] bytes) {
        StringBuilder out = new StringBuilder();
        for (byte b : bytes) out.append(String.format("%02x", b));
        return out.toString();
    }

    static void line(String name, byte[] key, byte[] value) {
        System.out.println(name + " " + hex(key) + " " + (value == null ? "null" : hex(value)));
    }
}
