// Package realnode runs the kube deployer's tests whose subject is the
// data path on a real node (kubetest.Options.Node): a kubelet on
// containerd and runc, a CNI bridge, kube-proxy and the cluster's DNS,
// where pods run svclab's image. `svclab run` of the S2 chain sends its
// load Job's requests through Services; `svclab run` of the shop runs
// its PostgreSQL as a backing Deployment (of kubetest's stand-in image,
// built from this machine's PostgreSQL, as no registry serves the
// official one here); an HPA scales a CPU-bound group on the kubelet's
// own resource metrics; the kubelet enforces [deploy.resources] in the
// containers' cgroups; the node's stop, and a sweep after its harness is
// killed with -9, leave nothing on the machine.
//
// The tests share one node (one machine holds one; kubetest.MainNode):
// those of pods run at once, each in namespaces of its own, then the
// node's stop (TestRealNode). They skip, saying why, where the machine
// cannot run the node: not root, Debian's containerd, runc or CNI
// plugins missing, or the kubelet not built (make kube-tools); the HPA
// test without metrics-server (make kube-tools), the shop's
// without PostgreSQL. The kwok tests (package e2e) keep what one node
// cannot show: placement over several nodes, and the fault states kwok
// stages.
package realnode
