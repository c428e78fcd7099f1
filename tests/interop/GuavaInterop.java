// GuavaInterop.java - the Java side of amq's Guava interoperability test
// (tests/interop/guava.sh): real Guava BloomFilters, written and read with
// Guava's own writeTo / readFrom, keys funnelled as stringFunnel(UTF_8).
//
//   write OUT N P KEYS     create(stringFunnel(UTF_8), N, P), put every line
//                          of KEYS (UTF-8), writeTo OUT
//   query IN KEYS          readFrom IN; print the lines of KEYS for which
//                          mightContain is true
//   count IN KEYS          readFrom IN; print how many lines may be in it
import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

public final class GuavaInterop {
    private static BloomFilter<CharSequence> read(String path) throws Exception {
        try (InputStream in = new FileInputStream(path)) {
            return BloomFilter.readFrom(in, Funnels.stringFunnel(StandardCharsets.UTF_8));
        }
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
        case "write": {
            BloomFilter<CharSequence> f = BloomFilter.create(
                Funnels.stringFunnel(StandardCharsets.UTF_8), Long.parseLong(args[2]),
                Double.parseDouble(args[3]));
            try (BufferedReader r = Files.newBufferedReader(Paths.get(args[4]),
                                                            StandardCharsets.UTF_8)) {
                String line;
                while ((line = r.readLine()) != null)
                    f.put(line);
            }
            try (OutputStream out = new BufferedOutputStream(new FileOutputStream(args[1]))) {
                f.writeTo(out);
            }
            break;
        }
        case "query":
        case "count": {
            BloomFilter<CharSequence> f = read(args[1]);
            long n = 0;
            try (BufferedReader r = Files.newBufferedReader(Paths.get(args[2]),
                                                            StandardCharsets.UTF_8);
                 Writer w = new BufferedWriter(
                     new OutputStreamWriter(System.out, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (f.mightContain(line)) {
                        n++;
                        if (args[0].equals("query"))
                            w.write(line + "\n");
                    }
                }
                if (args[0].equals("count"))
                    w.write(n + "\n");
            }
            break;
        }
        default:
            throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }
}
