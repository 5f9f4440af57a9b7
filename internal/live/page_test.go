package live

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestPageSmooth feeds a page in a real headless Chromium ten times
// faster than a run does, as three generators and thirty processes would
// (each second a merged histogram, thirty processes' samples), and
// measures the longest gap between the page's animation frames: the page
// must not freeze while it draws. It skips without chromium.
func TestPageSmooth(t *testing.T) {
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not found (Debian's chromium package)")
	}
	if _, err := files.Open("assets/" + chartLib); err != nil {
		t.Skip("the chart library is not embedded (make uplot)")
	}
	b := NewBoard()
	s := serve(t, b)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel2 := chromedp.NewContext(actx)
	defer cancel2()
	b.Experiment(Experiment{Command: "run", Name: "smooth"})
	b.RunStarted(Run{ID: "r"})
	if err := chromedp.Do(ctx, chromedp.Navigate(s.URL())); err != nil {
		t.Fatal(err)
	}
	// The page records its frames' times from here on.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[any](`window.gaps = []; (function f(t0) { requestAnimationFrame(t => { if (t0) gaps.push(t - t0); f(t); }); })()`)); err != nil {
		t.Fatal(err)
	}
	const seconds = 100
	for i := range seconds {
		h := hist()
		for g := range 3 {
			for v := range 500 {
				_ = h.RecordValue(int64(100 + v*(g+1)))
			}
		}
		b.Second(Second{Elapsed: time.Duration(i+1) * time.Second, Requests: 1500, RPS: 1500, Latency: h})
		ps := make([]Process, 30)
		for p := range ps {
			ps[p] = Process{Role: []string{"host", "sidecar", "telemetry"}[p%3], Name: fmt.Sprintf("p%02d", p), CPU: 0.1, Memory: 50 << 20}
		}
		b.Resources(ps)
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	shown, err := chromedp.Run(ctx, chromedp.TextContent("#cur-requests"))
	if err != nil {
		t.Fatal(err)
	}
	if shown != fmt.Sprint(seconds*1500) {
		t.Errorf("the page shows %s requests, want %d", shown, seconds*1500)
	}
	stats, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const g = gaps.slice().sort((a, b) => a - b); return [g.length, g[Math.floor(g.length * 0.99)], g[g.length - 1]]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames in %d s of events; frame gap p99 %.1f ms, max %.1f ms", int(stats[0]), seconds/10, stats[1], stats[2])
	if stats[2] > 1000 {
		t.Errorf("the page froze for %.0f ms", stats[2])
	}
}
