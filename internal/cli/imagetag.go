package cli

// defaultImageTag is the tag of this version's image: what `svclab image
// --tarball` writes without --tag, and what `svclab kube render` and the
// kube deployer run when deploy.kube.image is left out.
func defaultImageTag() string { return "svclab:" + sanitizeTag(version) }
