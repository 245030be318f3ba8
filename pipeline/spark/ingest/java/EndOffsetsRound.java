package cgr.ingest;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The end-offset sampler's per-partition work (pipeline/spark/ingest/sampler.py), kept in the
 * JVM: a round over many partitions crosses Py4J a few times in all, not a dozen times a
 * partition. Partitions travel as text, one per line, fields split by tabs (a topic name
 * holds neither: Kafka allows only [a-zA-Z0-9._-]).
 */
public final class EndOffsetsRound {
    private EndOffsetsRound() {
    }

    /**
     * Each topic's description as lines: "topic\tpartition\t1" (a leader) or "\t0" (none), or
     * one line "topic\t!\tjava class of the failure\treason" for a topic whose description
     * failed (or did not come in time).
     */
    public static String describe(Map<String, KafkaFuture<TopicDescription>> futures,
                                  String topics, long timeoutMs) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        StringBuilder out = new StringBuilder();
        for (String topic : lines(topics)) {
            KafkaFuture<TopicDescription> future = futures.get(topic);
            try {
                TopicDescription d = future.get(remaining(deadline), TimeUnit.NANOSECONDS);
                for (TopicPartitionInfo info : d.partitions()) {
                    Node leader = info.leader();
                    out.append(topic).append('\t').append(info.partition()).append('\t')
                        .append(leader != null && !leader.isEmpty() ? '1' : '0').append('\n');
                }
            } catch (Exception e) {
                Throwable cause = unwrapped(e);
                out.append(topic).append("\t!\t").append(cause.getClass().getName())
                    .append('\t').append(reason(cause)).append('\n');
            }
        }
        return out.toString();
    }

    /** A listOffsets request: every "topic\tpartition" line of `partitions` asked at `spec`. */
    public static Map<TopicPartition, OffsetSpec> request(String partitions, OffsetSpec spec) {
        Map<TopicPartition, OffsetSpec> wanted = new HashMap<>();
        for (TopicPartition tp : parse(partitions)) {
            wanted.put(tp, spec);
        }
        return wanted;
    }

    /**
     * A listOffsets call's answers, a line each partition of `partitions` in their order:
     * "offset\ttimestamp" or "!\treason". The whole answer is awaited until `timeoutMs`;
     * when some partition failed, each one's own answer is read as it stands.
     */
    public static String answers(ListOffsetsResult call, String partitions, long timeoutMs) {
        List<TopicPartition> asked = parse(partitions);
        Map<TopicPartition, ListOffsetsResultInfo> all = null;
        try {
            all = call.all().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            // some partition failed, or not all came in time: the others still have theirs
        }
        StringBuilder out = new StringBuilder();
        for (TopicPartition tp : asked) {
            try {
                ListOffsetsResultInfo info = all != null ? all.get(tp)
                    : call.partitionResult(tp).get(0, TimeUnit.MILLISECONDS);
                out.append(info.offset()).append('\t').append(info.timestamp()).append('\n');
            } catch (Exception e) {
                out.append("!\t").append(reason(unwrapped(e))).append('\n');
            }
        }
        return out.toString();
    }

    /** What went wrong, in one line: the class's simple name and its message. */
    static String reason(Throwable t) {
        String message = t.getMessage();
        if (message == null && t instanceof TimeoutException) {
            message = "no answer in time";  // our own wait ran out: it has no message
        }
        String line = t.getClass().getSimpleName() + (message != null ? ": " + message : "");
        return line.replace('\n', ' ').replace('\t', ' ');
    }

    private static Throwable unwrapped(Throwable e) {
        if (e instanceof ExecutionException && e.getCause() != null) {
            return e.getCause();
        }
        return e;
    }

    private static long remaining(long deadline) {
        return Math.max(0L, deadline - System.nanoTime());
    }

    private static List<String> lines(String text) {
        List<String> out = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isEmpty()) {
                out.add(line);
            }
        }
        return out;
    }

    private static List<TopicPartition> parse(String partitions) {
        List<TopicPartition> out = new ArrayList<>();
        for (String line : lines(partitions)) {
            int tab = line.indexOf('\t');
            out.add(new TopicPartition(line.substring(0, tab),
                                       Integer.parseInt(line.substring(tab + 1))));
        }
        return out;
    }
}
