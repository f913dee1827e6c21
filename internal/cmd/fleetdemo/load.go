package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// load sends requests through HAProxy: GET /hello, and one in ten a POST /orders with
// a fresh id, remembering the ids the service accepted.
type load struct {
	addr          string
	ok, failed    atomic.Int64
	mu            sync.Mutex
	accepted      []string
	firstFailures []string
}

func newLoad(addr string) *load { return &load{addr: addr} }

func (l *load) run(ctx context.Context, rate int) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	defer tr.CloseIdleConnections()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	defer wg.Wait()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // all workers busy
		}
		wg.Go(func() {
			defer func() { <-sem }()
			l.one(client, n)
		})
	}
}

func (l *load) one(c *http.Client, n int) {
	var resp *http.Response
	var err error
	id := ""
	if n%10 == 0 {
		id = fmt.Sprintf("demo-%d-%d", time.Now().UnixNano(), n)
		body := fmt.Sprintf(`{"id":%q,"item":"tea","qty":1}`, id)
		resp, err = c.Post("http://"+l.addr+"/orders", "application/json", bytes.NewBufferString(body))
	} else {
		resp, err = c.Get("http://" + l.addr + "/hello")
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	if err != nil {
		l.failed.Add(1)
		l.mu.Lock()
		if len(l.firstFailures) < 5 {
			l.firstFailures = append(l.firstFailures, err.Error())
		}
		l.mu.Unlock()
		return
	}
	l.ok.Add(1)
	if id != "" {
		l.mu.Lock()
		l.accepted = append(l.accepted, id)
		l.mu.Unlock()
	}
}
