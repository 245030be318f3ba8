// Kafka's own PersisterStateBatchCombiner (kafka-share-coordinator) on the cases read from
// stdin, one a line: "START OLD NEW", each batch list "first,last,state,count;..." or "-" for
// none. Prints each case's combined batches, in Kafka's order, in the same form.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.coordinator.share.PersisterStateBatchCombiner;
import org.apache.kafka.server.share.persister.PersisterStateBatch;

public class Combine {
    static List<PersisterStateBatch> parse(String text) {
        List<PersisterStateBatch> batches = new ArrayList<>();
        if (text.equals("-")) return batches;
        for (String batch : text.split(";")) {
            String[] f = batch.split(",");
            batches.add(new PersisterStateBatch(Long.parseLong(f[0]), Long.parseLong(f[1]),
                Byte.parseByte(f[2]), Short.parseShort(f[3])));
        }
        return batches;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split(" ");
            List<PersisterStateBatch> out = new PersisterStateBatchCombiner(
                parse(parts[1]), parse(parts[2]), Long.parseLong(parts[0])).combineStateBatches();
            StringBuilder text = new StringBuilder();
            for (PersisterStateBatch b : out) {
                if (text.length() > 0) text.append(';');
                text.append(b.firstOffset()).append(',').append(b.lastOffset()).append(',')
                    .append(b.deliveryState()).append(',').append(b.deliveryCount());
            }
            System.out.println(text.length() == 0 ? "-" : text.toString());
        }
    }
}
