"""Install mmseg-sign: ``pip install -e .`` (see README for the mmcv build).

A wheel (``pip wheel .`` / ``pip install .``) also ships the configs and
tools under ``mmseg_sign/.mim`` the way mmseg ships its own (``add_mim_
extension`` below), so that ``mmseg_sign::sign/sign_toy.py`` style paths
can be resolved from the installed package. The ``.mim`` folder is
generated at build time (git-ignored).
"""
import os
import os.path as osp
import shutil
import sys

from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))
MIM_FILES = ('configs', 'tools')


def get_version():
    ns = {}
    with open(osp.join(HERE, 'mmseg_sign', 'version.py')) as f:
        exec(f.read(), ns)
    return ns['__version__']


def add_mim_extension():
    """Copy ``configs`` and ``tools`` into ``mmseg_sign/.mim`` when a wheel
    or an sdist is built (as mmseg's setup.py does); an editable install
    (``pip install -e .``, ``setup.py develop``) leaves the tree alone."""
    if any(cmd in sys.argv for cmd in ('develop', 'editable_wheel')):
        return
    if not any(cmd in sys.argv
               for cmd in ('install', 'bdist_wheel', 'sdist', 'build',
                           'build_py')):
        return
    mim_path = osp.join(HERE, 'mmseg_sign', '.mim')
    os.makedirs(mim_path, exist_ok=True)
    for name in MIM_FILES:
        src = osp.join(HERE, name)
        dst = osp.join(mim_path, name)
        if not osp.isdir(src):
            continue
        if osp.islink(dst) or osp.isfile(dst):
            os.remove(dst)
        elif osp.isdir(dst):
            shutil.rmtree(dst)
        shutil.copytree(src, dst,
                        ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))


if __name__ == '__main__':
    add_mim_extension()
    setup(
        name='mmseg-sign',
        version=get_version(),
        description='SIGN generalized zero-shot semantic segmentation for '
        'MMSegmentation 1.x',
        long_description=open(
            osp.join(HERE, 'README.md'), encoding='utf-8').read(),
        long_description_content_type='text/markdown',
        license='Apache License 2.0',
        packages=find_packages(exclude=('tests', 'configs', 'tools')),
        include_package_data=True,
        package_data={
            'mmseg_sign': ['.mim/configs/**/*.py', '.mim/tools/**/*.py',
                           '.mim/tools/**/*.sh', '.mim/tools/*.py',
                           '.mim/tools/*.sh']
        },
        python_requires='>=3.8',
        # ranges that the code is tested with; scripts/install.sh installs
        # torch 2.13, mmcv 2.1.0 (built with its ops), mmengine 0.10.7,
        # mmsegmentation 1.2.2, gensim 4.4
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
        ],
        extras_require=dict(tests=['pytest']),
        zip_safe=False,
    )
