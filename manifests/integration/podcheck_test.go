package integration_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// check returns what is wrong with a deployed operator: it fails on the
// first thing that does not hold. The pods must all become Ready without
// a restart, a failing probe or a denied request; one replica must hold
// the operator's Lease; every Service must reach every pod on each of
// its ports; and the API server must call the validating webhook through
// its Service, with a certificate for the Service's name.
func (p *podsTest) check(ctx context.Context, d *deployed) error {
	var dep appsv1.Deployment
	if err := only1(d.objs, "Deployment", &dep); err != nil {
		return err
	}
	replicas := int(ptr.Deref(dep.Spec.Replicas, 1))
	pods, err := p.waitReady(ctx, d, replicas, 60*time.Second)
	if err == nil {
		err = p.checkLease(ctx, d, pods)
	}
	if err == nil {
		err = p.checkServices(ctx, d, pods)
	}
	if err == nil {
		err = p.checkWebhook(ctx, d)
	}
	if err == nil {
		err = p.checkMetrics(ctx, &dep, pods)
	}
	// A denied request fails the run whatever else happened.
	if denied := p.denied(d); denied != "" {
		err = errors.Join(err, errors.New(denied))
	}
	return err
}

// stillLive waits until the operator's pods have run long enough for
// their liveness probe to have killed them (initialDelaySeconds +
// periodSeconds × failureThreshold), then checks that it did not, and
// that no request was denied.
func (p *podsTest) stillLive(ctx context.Context, d *deployed) error {
	var dep appsv1.Deployment
	if err := only1(d.objs, "Deployment", &dep); err != nil {
		return err
	}
	if lp := dep.Spec.Template.Spec.Containers[0].LivenessProbe; lp != nil {
		wait := time.Duration(lp.InitialDelaySeconds+max(lp.PeriodSeconds, 10)*max(lp.FailureThreshold, 3)+5) * time.Second
		time.Sleep(time.Until(d.since.Add(wait)))
	}
	pods, err := p.waitReady(ctx, d, int(ptr.Deref(dep.Spec.Replicas, 1)), 10*time.Second)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		evs, err := p.kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			// A first probe may fail before the server listens; failing
			// failureThreshold times in a row gets the container killed.
			if e.Reason == "Killing" && strings.Contains(e.Message, "liveness") {
				return fmt.Errorf("pod %s: %s", pod.Name, e.Message)
			}
		}
	}
	if denied := p.denied(d); denied != "" {
		return errors.New(denied)
	}
	return nil
}

func only1(objs []*unstructured.Unstructured, kind string, into any) error {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("got %d %s objects, want 1", len(found), kind)
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, into)
}

// waitReady waits until n pods of the operator are Ready. A container that
// exits, waits on an error, or whose probe answers 404 (a path that does
// not exist is never transient) fails at once.
func (p *podsTest) waitReady(ctx context.Context, d *deployed, n int, timeout time.Duration) ([]corev1.Pod, error) {
	deadline := time.Now().Add(timeout)
	for {
		list, err := p.kube.CoreV1().Pods(namespaceOf(d.op)).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + d.op})
		if err != nil {
			return nil, err
		}
		var ready []corev1.Pod
		for _, pod := range list.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.RestartCount > 0 || cs.State.Terminated != nil {
					return nil, fmt.Errorf("pod %s: container %s exited (restarts %d, last state %s); its log ends:\n%s",
						pod.Name, cs.Name, cs.RestartCount, terminated(cs), p.logTail(pod.UID, cs.Name))
				}
				if w := cs.State.Waiting; w != nil && w.Reason != "ContainerCreating" {
					return nil, fmt.Errorf("pod %s: container %s waits: %s: %s", pod.Name, cs.Name, w.Reason, w.Message)
				}
			}
			if pod.DeletionTimestamp == nil && podIsReady(&pod) {
				ready = append(ready, pod)
			}
		}
		if msg := p.notFound(ctx, list.Items); msg != "" {
			return nil, errors.New(msg)
		}
		if len(ready) == n {
			return ready, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d pods of %s Ready after %s:%s%s", len(ready), n, d.op, timeout, podStates(list.Items), p.podEvents(ctx, list.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func terminated(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if cs.State.Terminated != nil {
		t = cs.State.Terminated
	}
	if t == nil {
		return "none"
	}
	return fmt.Sprintf("exit code %d, %s", t.ExitCode, t.Reason)
}

func podIsReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

func podStates(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s phase=%s ip=%s", p.Name, p.Status.Phase, p.Status.PodIP)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " %s: ready=%v restarts=%d", cs.Name, cs.Ready, cs.RestartCount)
		}
	}
	return b.String()
}

// podEvents are the Warning Events about pods (probe failures, above all).
func (p *podsTest) podEvents(ctx context.Context, pods []corev1.Pod) string {
	var b strings.Builder
	for _, pod := range pods {
		evs, err := p.kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			continue
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning {
				fmt.Fprintf(&b, "\n  event %s %s: %s", pod.Name, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}

// notFound reports a probe that got 404.
func (p *podsTest) notFound(ctx context.Context, pods []corev1.Pod) string {
	for _, pod := range pods {
		evs, err := p.kube.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			continue
		}
		for _, e := range evs.Items {
			if e.Reason == "Unhealthy" && strings.Contains(e.Message, "statuscode: 404") {
				return fmt.Sprintf("pod %s: %s (the probe's path does not exist)", pod.Name, e.Message)
			}
		}
	}
	return ""
}

// checkLease finds the Lease one of the pods holds: its identity is the
// pod's host name, which the node sets to the pod's name.
func (p *podsTest) checkLease(ctx context.Context, d *deployed, pods []corev1.Pod) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if denied := p.denied(d); denied != "" {
			return errors.New("no Lease held")
		}
		leases, err := p.kube.CoordinationV1().Leases(namespaceOf(d.op)).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var holders []string
		for _, l := range leases.Items {
			h := ptr.Deref(l.Spec.HolderIdentity, "")
			holders = append(holders, l.Name+"="+h)
			for _, pod := range pods {
				if strings.HasPrefix(h, pod.Name+"_") {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no Lease in %s is held by a replica after 30s: %v", namespaceOf(d.op), holders)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkServices: for each Service of the operator, the EndpointSlices the
// controller manager makes from the pods list every Ready pod on every
// port, and each answers a TCP connection there.
func (p *podsTest) checkServices(ctx context.Context, d *deployed, pods []corev1.Pod) error {
	for _, o := range d.objs {
		if o.GetKind() != "Service" {
			continue
		}
		var svc corev1.Service
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &svc); err != nil {
			return err
		}
		var last error
		deadline := time.Now().Add(10 * time.Second)
		for {
			if last = p.serviceReaches(ctx, svc, pods); last == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if last != nil {
			return fmt.Errorf("Service %s: %w", svc.Name, last)
		}
	}
	return nil
}

func (p *podsTest) serviceReaches(ctx context.Context, svc corev1.Service, pods []corev1.Pod) error {
	eps, err := p.kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	if err != nil {
		return err
	}
	for _, sp := range svc.Spec.Ports {
		var addrs []string
		for _, s := range eps.Items {
			for _, ep := range s.Ports {
				if ptr.Deref(ep.Name, "") != sp.Name || ep.Port == nil {
					continue
				}
				for _, e := range s.Endpoints {
					if ptr.Deref(e.Conditions.Ready, false) {
						addrs = append(addrs, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*ep.Port))))
					}
				}
			}
		}
		if len(addrs) != len(pods) {
			return fmt.Errorf("port %s (target %s): %d ready endpoints %v for %d Ready pods", sp.Name, sp.TargetPort.String(), len(addrs), addrs, len(pods))
		}
		for _, a := range addrs {
			conn, err := net.DialTimeout("tcp", a, 2*time.Second)
			if err != nil {
				return fmt.Errorf("port %s (target %s): endpoint %s: %w", sp.Name, sp.TargetPort.String(), a, err)
			}
			_ = conn.Close()
		}
	}
	return nil
}

// checkWebhook: the API server calls each validating webhook through its
// Service (an invalid object is denied with the webhook's message), and
// every endpoint of the Service presents a certificate for the Service's
// name, signed by the configuration's caBundle.
func (p *podsTest) checkWebhook(ctx context.Context, d *deployed) error {
	i := slices.IndexFunc(d.objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ValidatingWebhookConfiguration" })
	if i < 0 {
		return nil
	}
	refused := own[d.op].refused
	if refused == nil {
		return fmt.Errorf("it renders ValidatingWebhookConfiguration %s, and its deployable has no refused to call it with", d.objs[i].GetName())
	}
	var last error
	deadline := time.Now().Add(30 * time.Second)
	for {
		want, err := refused(ctx, p)
		if err == nil {
			return errors.New("an object its webhook must refuse was created: the webhook did not deny it")
		}
		if strings.Contains(err.Error(), want) {
			break
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server could not call the webhook through its Service for 30s: %w", last)
		}
		time.Sleep(300 * time.Millisecond)
	}
	vwc, err := p.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, d.objs[i].GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, w := range vwc.Webhooks {
		ref := w.ClientConfig.Service
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(w.ClientConfig.CABundle) {
			return fmt.Errorf("webhook %s: no caBundle", w.Name)
		}
		svc, err := p.kube.CoreV1().Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		eps, err := p.kube.DiscoveryV1().EndpointSlices(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + ref.Name})
		if err != nil {
			return err
		}
		serverName := ref.Name + "." + ref.Namespace + ".svc"
		var port int32
		for _, sp := range svc.Spec.Ports {
			if sp.Port == ptr.Deref(ref.Port, 443) {
				for _, s := range eps.Items {
					for _, ep := range s.Ports {
						if ptr.Deref(ep.Name, "") == sp.Name && ep.Port != nil {
							port = *ep.Port
						}
					}
				}
			}
		}
		for _, s := range eps.Items {
			for _, e := range s.Endpoints {
				addr := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port)))
				conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
				if err != nil {
					return fmt.Errorf("webhook %s at %s as %s: %w", w.Name, addr, serverName, err)
				}
				_ = conn.Close()
			}
		}
	}
	return nil
}

// checkMetrics scrapes each pod's /metrics over HTTPS as Prometheus would,
// with a token of the ServiceAccount the metrics reader's binding names,
// and finds there the soft memory limit the container's GOMEMLIMIT (its
// memory limit, from a resourceFieldRef) set.
func (p *podsTest) checkMetrics(ctx context.Context, dep *appsv1.Deployment, pods []corev1.Pod) error {
	c := dep.Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "https-metrics" })
	if i < 0 {
		return errors.New("no container port https-metrics")
	}
	port := c.Ports[i].ContainerPort
	limit := c.Resources.Limits.Memory()
	if limit.IsZero() {
		return errors.New("no memory limit")
	}
	for _, obj := range []any{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: "monitoring"}},
	} {
		var err error
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = p.kube.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = p.kube.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	tok, err := p.kube.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, "prometheus", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	want := "go_gc_gomemlimit_bytes " + strconv.FormatFloat(float64(limit.Value()), 'g', -1, 64)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the metrics certificate is self-signed; the token is what is checked
	}}
	defer client.CloseIdleConnections()
	for _, pod := range pods {
		url := "https://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port))) + "/metrics"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("pod %s: GET %s as monitoring/prometheus: %s", pod.Name, url, resp.Status)
		}
		if !strings.Contains(string(body), want+"\n") {
			return fmt.Errorf("pod %s: /metrics lacks %q: GOMEMLIMIT is not the memory limit", pod.Name, want)
		}
	}
	return nil
}

// denied lists the requests of the operator's ServiceAccount that RBAC
// refused: in the logs of the run's containers, and in the API server's
// audit log since the run began.
func (p *podsTest) denied(d *deployed) string {
	var found []string
	logs := p.node.ContainerLogs()
	for _, l := range logs[min(d.logsFrom, len(logs)):] {
		if l.Namespace != namespaceOf(d.op) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(l.Dir, "*.log"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for line := range strings.Lines(string(b)) {
				if strings.Contains(line, "forbidden") {
					found = append(found, fmt.Sprintf("%s: %s", l.Pod, strings.TrimSpace(line)))
				}
			}
		}
	}
	sa := "system:serviceaccount:" + namespaceOf(d.op) + ":" + d.op
	f, err := os.Open(p.audit)
	if err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			var ev struct {
				User           struct{ Username string }
				Verb           string
				RequestURI     string
				ResponseStatus struct{ Code int }
				StageTimestamp time.Time
			}
			if json.Unmarshal(s.Bytes(), &ev) != nil || ev.User.Username != sa || ev.ResponseStatus.Code != 403 || ev.StageTimestamp.Before(d.since) {
				continue
			}
			found = append(found, fmt.Sprintf("audit: %s %s %s: 403", sa, ev.Verb, ev.RequestURI))
		}
	}
	if len(found) == 0 {
		return ""
	}
	if len(found) > 5 {
		found = append(found[:5], fmt.Sprintf("and %d more", len(found)-5))
	}
	return "denied requests:\n  " + strings.Join(found, "\n  ")
}

func (p *podsTest) logTail(uid any, container string) string {
	for _, l := range p.node.ContainerLogs() {
		if string(l.UID) == fmt.Sprint(uid) && l.Container == container {
			files, _ := filepath.Glob(filepath.Join(l.Dir, "*.log"))
			var all []byte
			for _, f := range files {
				b, _ := os.ReadFile(f)
				all = append(all, b...)
			}
			// The cause of an early exit (a flag error) comes first, before a
			// usage message; a later failure is at the end.
			lines := strings.Split(strings.TrimRight(string(all), "\n"), "\n")
			if len(lines) > 25 {
				lines = append(append(lines[:5:5], "..."), lines[len(lines)-15:]...)
			}
			return strings.Join(lines, "\n")
		}
	}
	return "(no log)"
}
