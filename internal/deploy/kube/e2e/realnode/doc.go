// Package realnode runs the kube deployer's tests whose subject is the
// data path on a real node (kubetest.Options.Node): a kubelet on
// containerd and runc, a CNI bridge, kube-proxy and the cluster's DNS,
// where pods run svclab's image. `svclab run` of the S2 chain sends its
// load Job's requests through Services; an HPA scales a CPU-bound group
// on the kubelet's own resource metrics; the kubelet enforces
// [deploy.resources] in the containers' cgroups; the node's stop, and a
// sweep after its harness is killed with -9, leave nothing on the
// machine.
//
// The tests run one after another on one node (one machine holds one;
// kubetest.MainNode). They skip, saying why, where the machine cannot
// run the node: not root, Debian's containerd, runc or CNI plugins
// missing, or the kubelet not built (make kube-tools). The kwok tests
// (package e2e) keep what one node cannot show: placement over several
// nodes, and the fault states kwok stages.
package realnode
