// A sarama producer and consumer group for the cluster failover test: "produce BOOTSTRAP TOPIC COUNT"
// prints "acked VALUE" for every record the cluster acknowledged (acks=all, retried through leader
// changes); "consume BOOTSTRAP TOPIC GROUP WANT" prints "read VALUE" until WANT distinct values are read
// or 60 s pass.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/Shopify/sarama"
)

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V2_1_0_0
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Retry.Max = 50
	c.Producer.Retry.Backoff = 200 * time.Millisecond
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	return c
}

type reader struct {
	seen map[string]bool
	want int
	done chan struct{}
}

func (r *reader) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (r *reader) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (r *reader) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		v := string(msg.Value)
		fmt.Println("read", v)
		s.MarkMessage(msg, "")
		if !r.seen[v] {
			r.seen[v] = true
			if len(r.seen) == r.want {
				close(r.done)
			}
		}
	}
	return nil
}

func main() {
	brokers := strings.Split(os.Args[2], ",")
	topic := os.Args[3]
	switch os.Args[1] {
	case "produce":
		count, _ := strconv.Atoi(os.Args[4])
		producer, err := sarama.NewSyncProducer(brokers, config())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; i < count; i++ {
			v := fmt.Sprintf("record-%05d", i)
			if _, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err == nil {
				fmt.Println("acked", v)
			} else {
				fmt.Fprintln(os.Stderr, "failed", v, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		producer.Close()
	case "consume":
		want, _ := strconv.Atoi(os.Args[5])
		group, err := sarama.NewConsumerGroup(brokers, os.Args[4], config())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		r := &reader{seen: map[string]bool{}, want: want, done: make(chan struct{})}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		go func() {
			for ctx.Err() == nil {
				if err := group.Consume(ctx, []string{topic}, r); err != nil {
					fmt.Fprintln(os.Stderr, err)
					time.Sleep(200 * time.Millisecond)
				}
			}
		}()
		select {
		case <-r.done:
		case <-ctx.Done():
		}
		cancel()
		group.Close()
	}
}
