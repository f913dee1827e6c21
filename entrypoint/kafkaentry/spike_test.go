package kafkaentry

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"go.uber.org/goleak"

	"github.com/servicewright/servicewright/internal/testenv"
)

func TestSpike(t *testing.T) {
	k, err := testenv.StartKafka()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if err := k.CreateTopic("t1", 3); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	w := kafka.NewWriter(kafka.WriterConfig{Brokers: k.Brokers(), BatchTimeout: 10 * time.Millisecond})
	w.Balancer = &kafka.Hash{}
	var msgs []kafka.Message
	for i := range 1000 {
		msgs = append(msgs, kafka.Message{Topic: "t1", Key: []byte(strconv.Itoa(i)), Value: []byte("v")})
	}
	w.Topic = ""
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fmt.Println("produce", time.Since(t0))
	t0 = time.Now()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Brokers(), GroupID: "g", GroupTopics: []string{"t1"}, MaxWait: 500 * time.Millisecond})
	ctx := context.Background()
	for i := range 1000 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			fmt.Println("first msg", time.Since(t0))
		}
		if i%100 == 99 {
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	fmt.Println("consume", time.Since(t0))
	t0 = time.Now()
	r.Close()
	fmt.Println("close", time.Since(t0))
	t0 = time.Now()
	if err := goleak.Find(goleak.IgnoreCurrent()); err != nil {
		fmt.Println("leak", err)
	}
	fmt.Println("leakcheck", time.Since(t0))
}
