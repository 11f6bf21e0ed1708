// Command hostpath-provisioner is a dynamic provisioner for the volume tests
// (tests/e2e/test_volumes.py), built on the external-provisioner library
// (sigs.k8s.io/sig-storage-lib-external-provisioner/v13) after its hostpath example.
//
// For every claim whose StorageClass names --provisioner it makes a directory under --dir and
// returns a hostPath PersistentVolume. Unlike the library's example, a claim with a selected
// node (volume.kubernetes.io/selected-node, set by the scheduler's VolumeBinding PreBind for
// WaitForFirstConsumer classes) gets a PV whose nodeAffinity pins it to that node's hostname,
// the way a local-volume provisioner does: the library passes the node to Provision but
// leaves the PV's affinity to the provisioner.
package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// The annotation naming the directory's owner, so that Delete only removes what we made.
const identityAnnotation = "kube-extender.io/hostpath-provisioner-dir"

type hostPath struct{ dir string }

func (p *hostPath) Provision(
	_ context.Context, options controller.ProvisionOptions,
) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	path := filepath.Join(p.dir, options.PVName)
	if err := os.MkdirAll(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        options.PVName,
			Annotations: map[string]string{identityAnnotation: p.dir},
		},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: *options.StorageClass.ReclaimPolicy,
			AccessModes:                   options.PVC.Spec.AccessModes,
			VolumeMode:                    options.PVC.Spec.VolumeMode,
			Capacity: v1.ResourceList{
				v1.ResourceStorage: options.PVC.Spec.Resources.Requests[v1.ResourceStorage],
			},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: path},
			},
			MountOptions: options.StorageClass.MountOptions,
		},
	}
	if node := options.SelectedNodeName; node != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node},
			}}}},
		}}
	}
	return pv, controller.ProvisioningFinished, nil
}

func (p *hostPath) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	if pv.Annotations[identityAnnotation] != p.dir || pv.Spec.HostPath == nil {
		return &controller.IgnoredError{Reason: "the PV was not provisioned from " + p.dir}
	}
	return os.RemoveAll(pv.Spec.HostPath.Path)
}

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	dir := flag.String("dir", "", "directory the volumes' directories are made in (required)")
	name := flag.String("provisioner", "kube-extender.io/hostpath", "the StorageClass provisioner name served")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		klog.Error(errors.New("--kubeconfig and --dir are required"), "bad flags")
		os.Exit(2)
	}
	syscall.Umask(0)
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.ErrorS(err, "loading the kubeconfig")
		os.Exit(1)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.ErrorS(err, "making the client")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pc := controller.NewProvisionController(ctx, client, *name, &hostPath{dir: *dir},
		controller.LeaderElection(false))
	klog.InfoS("hostpath provisioner started", "provisioner", *name, "dir", *dir)
	pc.Run(ctx)
}
