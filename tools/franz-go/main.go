// franz-go-client: franz-go (github.com/twmb/franz-go), a stock Go Kafka client, driven by minikafka's tests.
//
//	franz-go-client consume -brokers B -topic T -group G -count N [-timeout D]
//	    joins group G, reads T from the group's committed offsets (else the earliest) until N records arrived,
//	    printing "partition offset value" per record, commits them synchronously and leaves the group.
//	franz-go-client produce -brokers B -topic T -codec none|gzip|snappy|lz4|zstd -count N
//	    produces N records "codec record i" with acks=all in batches compressed with the codec, printing
//	    "partition offset" per record.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: franz-go-client consume|produce [flags]"))
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	brokers := flags.String("brokers", "", "bootstrap servers, comma-separated")
	topic := flags.String("topic", "", "the topic")
	group := flags.String("group", "", "the consumer group (consume)")
	codec := flags.String("codec", "none", "the compression codec (produce)")
	count := flags.Int("count", 0, "records to read or write")
	timeout := flags.Duration("timeout", 60*time.Second, "the limit on the whole run")
	if err := flags.Parse(os.Args[2:]); err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	seeds := kgo.SeedBrokers(strings.Split(*brokers, ",")...)
	var err error
	switch os.Args[1] {
	case "consume":
		err = consume(ctx, seeds, *topic, *group, *count)
	case "produce":
		err = produce(ctx, seeds, *topic, *codec, *count)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "franz-go-client:", err)
	os.Exit(1)
}

func consume(ctx context.Context, seeds kgo.Opt, topic, group string, count int) error {
	client, err := kgo.NewClient(seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	defer client.Close() // leaves the group
	for read := 0; read < count; {
		fetches := client.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", read, count, err)
		}
		for _, fetchErr := range fetches.Errors() {
			return fmt.Errorf("fetching %s-%d: %w", fetchErr.Topic, fetchErr.Partition, fetchErr.Err)
		}
		fetches.EachRecord(func(record *kgo.Record) {
			fmt.Printf("%d %d %s\n", record.Partition, record.Offset, record.Value)
			read++
		})
	}
	if err := client.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	fmt.Println("committed")
	return nil
}

var codecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

func produce(ctx context.Context, seeds kgo.Opt, topic, codecName string, count int) error {
	codec, ok := codecs[codecName]
	if !ok {
		return fmt.Errorf("unknown codec %q", codecName)
	}
	client, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer client.Close()
	records := make([]*kgo.Record, count)
	for i := range records {
		records[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%s record %d: %s", codecName, i,
			strings.Repeat("compressible text ", 8)))}
	}
	results := client.ProduceSync(ctx, records...)
	if err := results.FirstErr(); err != nil {
		return err
	}
	for _, result := range results {
		fmt.Printf("%d %d\n", result.Record.Partition, result.Record.Offset)
	}
	return nil
}
